// Empty initializers for the LLVM targets this library does not contain.
//
// lld's ELF driver initializes every target LLVM was configured with (for
// LTO, which we never use: our inputs are AMDGPU objects). Linking those
// targets' archives would add tens of megabytes; these empty definitions
// close the link instead. Only AMDGPU and NVPTX are real here; a target
// initialized through one of these stubs simply stays unregistered, so a
// lookup of it fails with LLVM's ordinary "no such target" error.
//
// The list is Debian's LLVM 22 configuration (llvm/Config/Targets.def and
// AsmParsers.def, less AMDGPU and NVPTX); a missing entry shows up as an
// undefined symbol when libtiledsl links.

#define TILEDSL_UNUSED_TARGET(T)                   \
  extern "C" void LLVMInitialize##T##TargetInfo() {} \
  extern "C" void LLVMInitialize##T##Target() {}     \
  extern "C" void LLVMInitialize##T##TargetMC() {}   \
  extern "C" void LLVMInitialize##T##AsmPrinter() {}
#define TILEDSL_UNUSED_ASM_PARSER(T) extern "C" void LLVMInitialize##T##AsmParser() {}

// Targets with an assembly parser.
#define TILEDSL_UNUSED_TARGET_WITH_PARSER(T) \
  TILEDSL_UNUSED_TARGET(T)                   \
  TILEDSL_UNUSED_ASM_PARSER(T)

TILEDSL_UNUSED_TARGET_WITH_PARSER(AArch64)
TILEDSL_UNUSED_TARGET_WITH_PARSER(ARM)
TILEDSL_UNUSED_TARGET_WITH_PARSER(AVR)
TILEDSL_UNUSED_TARGET_WITH_PARSER(BPF)
TILEDSL_UNUSED_TARGET_WITH_PARSER(Hexagon)
TILEDSL_UNUSED_TARGET_WITH_PARSER(Lanai)
TILEDSL_UNUSED_TARGET_WITH_PARSER(LoongArch)
TILEDSL_UNUSED_TARGET_WITH_PARSER(Mips)
TILEDSL_UNUSED_TARGET_WITH_PARSER(MSP430)
TILEDSL_UNUSED_TARGET_WITH_PARSER(PowerPC)
TILEDSL_UNUSED_TARGET_WITH_PARSER(RISCV)
TILEDSL_UNUSED_TARGET_WITH_PARSER(Sparc)
TILEDSL_UNUSED_TARGET_WITH_PARSER(SystemZ)
TILEDSL_UNUSED_TARGET_WITH_PARSER(VE)
TILEDSL_UNUSED_TARGET_WITH_PARSER(WebAssembly)
TILEDSL_UNUSED_TARGET_WITH_PARSER(X86)
TILEDSL_UNUSED_TARGET_WITH_PARSER(M68k)
TILEDSL_UNUSED_TARGET_WITH_PARSER(Xtensa)
// Targets without one.
TILEDSL_UNUSED_TARGET(SPIRV)
TILEDSL_UNUSED_TARGET(XCore)
