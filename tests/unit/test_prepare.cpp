// Device::prepare (Triton's warmup): compiling and loading a kernel for a
// launch's arguments without launching it. Its arguments are checked as a
// launch's are; on the interpreter it compiles nothing; on a GPU the launch
// after it compiles and loads nothing more.
#include <catch2/catch.hpp>

#include <vector>

#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

void twice(ptr<float> x, scalar<int32_t> n) {
  auto offs = program_id(0) * 64 + arange(0, 64);  // [64] i32
  auto mask = offs < n;                             // [64] i1
  store(x + offs, load(x + offs, mask) * 2.0f, mask);
}

}  // namespace

TEST_CASE("Device::prepare checks its arguments as a launch does", "[runtime]") {
  Device dev = Device::get("interp");
  Kernel k = compile(twice, {.name = "twice"});
  Buffer x = dev.upload(std::vector<float>(64, 1.0f));
  CHECK_NOTHROW(dev.prepare(k, {x, 64}));
  CHECK(x.download<float>() == std::vector<float>(64, 1.0f));  // nothing ran
  CHECK_THROWS_WITH(dev.prepare(k, {x}), Catch::Contains("test_prepare.cpp") && Catch::Contains("expects 2 argument"));
  CHECK_THROWS_WITH(dev.prepare(k, {64, x}), Catch::Contains("test_prepare.cpp") && Catch::Contains("argument 1"));
  CHECK_THROWS_WITH(dev.prepare(Kernel(), {x, 64}), Catch::Contains("test_prepare.cpp"));
}

TEST_CASE("Device::prepare compiles and loads before the first launch", "[gpu]") {
  REQUIRE_GPU();
  Device dev = Device::get("cuda");
  Kernel k = compile(twice, {.name = "twice_prepared"});
  Buffer x = dev.upload(std::vector<float>(100, 1.0f));
  CompileStats before = dev.compile_stats();
  dev.prepare(k, {x, 100});
  CompileStats prepared = dev.compile_stats();
  CHECK(prepared.modules_loaded == before.modules_loaded + 1);
  dev(k, Grid{2}, x, 100);
  dev.synchronize();
  CHECK(dev.compile_stats().modules_loaded == prepared.modules_loaded);
  CHECK(x.download<float>() == std::vector<float>(100, 2.0f));
}
