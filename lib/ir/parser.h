// Reads the Tile IR text form written by printer.h. Errors are tl::Error
// "<file>:<line>:<col>: expected <what>, found '<token>'".
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "ir/export.h"
#include "ir/ir.h"

TILEDSL_SHARED_BEGIN

namespace tl::ir {

std::unique_ptr<Module> parse(std::string_view text, const std::string& filename = "<input>");

}  // namespace tl::ir

TILEDSL_SHARED_END
