// Registers the targets of every back end built into this library.
#include "codegen/target.h"

namespace tl::codegen {

void register_nvptx_targets();
void register_amdgpu_targets();

void register_builtin_targets() {
  register_nvptx_targets();
  register_amdgpu_targets();
}

}  // namespace tl::codegen
