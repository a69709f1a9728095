// The Catch2 test runner's main.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
