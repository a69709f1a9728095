// The AMD back end (backends/amdgpu) without an AMD GPU: traced kernels are
// compiled for gfx90a, gfx942 (wave64) and gfx1100 (wave32), and what comes
// out is read back: the code object's ELF header (machine, code object V5,
// the GPU in e_flags), its kernel symbol and 64-byte kernel descriptor (no
// scratch, wave size, the dispatch-pointer SGPR when num_programs reads the
// packet), and the AMDGCN assembly (vector loads, DPP / ds_bpermute in the
// reductions, barriers, a loop). When llvm-objdump-22 is installed the code
// object is also disassembled. The "hip" device is checked where ROCm is
// absent: it must say so clearly.
//
// dot: the MFMA / WMMA fragment layouts are compared with the ISA's lane
// formulas, and dot kernels (one tile, and the gemm example's K loop) must
// come out as the expected matrix instructions, as many as the tile needs,
// without scratch. Whether the hardware computes the right numbers cannot be
// checked here (no AMD GPU): that is for a machine with one.
#include <catch2/catch.hpp>

#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "../../examples/kernels/gemm.h"
#include "amdgpu/hip_device.h"
#include "amdgpu/matrix_unit.h"
#include "codegen/compile.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

// ------------------------------------------------------------------ kernels
template <int BLOCK>
void amd_vector_add(ptr<float> x, ptr<float> y, ptr<float> out, scalar<int32_t> n) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                                  // [BLOCK] i1
  auto a = load(x + offs, mask);                         // [BLOCK] f32
  auto b = load(y + offs, mask, 0.0f);
  store(out + offs, a + b, mask);
}

// One program per row; lanes past n_cols read -inf, which changes neither
// the max nor (exp(-inf) = 0) the sum.
template <int BLOCK>
void amd_softmax(ptr<float> out, ptr<float> in, scalar<int32_t> stride, scalar<int32_t> n_cols) {
  auto row = program_id(0);
  auto cols = arange(0, BLOCK);                                  // [BLOCK] i32
  auto mask = cols < n_cols;                                     // [BLOCK] i1
  auto x = load(in + row * stride + cols, mask, -INFINITY);      // [BLOCK] f32
  auto numerator = exp(x - max(x, 0));                           // [BLOCK] f32
  store(out + row * stride + cols, numerator / sum(numerator, 0), mask);
}

// out[pid, :] = sum over chunks i of x[pid, i, :]: acc is carried by the
// loop, the addresses come from the induction variable.
template <int BLOCK>
void amd_chunk_sum(ptr<float> x, ptr<float> out, scalar<int32_t> n_chunks) {
  auto offs = arange(0, BLOCK);                                  // [BLOCK] i32
  auto acc = zeros<float>({BLOCK});                              // [BLOCK] f32
  auto row = x + program_id(0) * n_chunks * BLOCK;               // ptr<f32>
  for (auto i : range(0, n_chunks)) {
    acc = acc + load(row + i * BLOCK + offs);
  }
  store(out + program_id(0) * BLOCK + offs, acc);
}

// The grid's shape as the kernel sees it.
void amd_grid_shape(ptr<int32_t> out) {
  auto base = out + (program_id(0) + program_id(1) * num_programs(0)) * 3;
  store(base, num_programs(0));
  store(base + 1, num_programs(1));
  store(base + 2, num_programs(2));
}

// One tile: C [BM, BN] = A [BM, BK] x B [BK, BN], all row-major.
template <class E, int BM, int BN, int BK, bool IEEE = false>
void amd_dot(ptr<E> a, ptr<E> b, ptr<detail::dot_acc_t<E>> c) {
  auto m = arange(0, BM), n = arange(0, BN), k = arange(0, BK);
  auto at = load(a + col(m) * BK + row(k));                                      // [BM, BK] E
  auto bt = load(b + col(k) * BN + row(n));                                      // [BK, BN] E
  auto r = dot(at, bt, DotOptions{.input_precision = IEEE ? "ieee" : "tf32"});  // [BM, BN] f32 or i32
  store(c + col(m) * BN + row(n), r);
}

void amd_print(ptr<float> x) { device_print("x", load(x + arange(0, 64))); }

void amd_assert(ptr<float> x) { device_assert(load(x + arange(0, 64)) >= 0.0f, "negative input"); }

// ------------------------------------------------------------------ helpers
const std::vector<std::string> kTargets = {"gfx90a", "gfx942", "gfx1100"};

bool is_wave32(const std::string& target) { return target.rfind("gfx9", 0) != 0; }

// Every pointer 16-byte aligned, every integer a multiple of 16: what the
// runtime would specialize on for typical sizes.
codegen::Specialization aligned_spec(const detail::KernelImpl& k) {
  codegen::Specialization s;
  for (const auto& p : k.params)
    s.args.push_back(p.is_ptr ? codegen::pointer_arg_facts(0x10000) : codegen::int_arg_facts(4096));
  return s;
}

codegen::CompiledKernel compile_for(const Kernel& k, const std::string& target) {
  return codegen::compile(*k.impl(), aligned_spec(*k.impl()), target);
}

template <class T>
T read_at(const std::vector<uint8_t>& bytes, size_t offset) {
  REQUIRE(offset + sizeof(T) <= bytes.size());
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}

// What the tests read from an AMDGPU code object.
struct CodeObject {
  Elf64_Ehdr header{};
  std::vector<Elf64_Shdr> sections;
  std::map<std::string, Elf64_Sym> symbols;  // from .symtab and .dynsym
  std::vector<uint8_t> bytes;

  // The bytes of a symbol's object, through the section holding it.
  std::vector<uint8_t> object(const std::string& name) const {
    const Elf64_Sym& s = symbols.at(name);
    REQUIRE(s.st_shndx < sections.size());
    const Elf64_Shdr& sec = sections[s.st_shndx];
    REQUIRE(s.st_value >= sec.sh_addr);
    size_t at = size_t(sec.sh_offset + (s.st_value - sec.sh_addr));
    REQUIRE(at + s.st_size <= bytes.size());
    return std::vector<uint8_t>(bytes.begin() + long(at), bytes.begin() + long(at + s.st_size));
  }
};

CodeObject parse_code_object(const std::vector<uint8_t>& bytes) {
  CodeObject co;
  co.bytes = bytes;
  REQUIRE(bytes.size() >= sizeof(Elf64_Ehdr));
  co.header = read_at<Elf64_Ehdr>(bytes, 0);
  REQUIRE(std::memcmp(co.header.e_ident, ELFMAG, SELFMAG) == 0);
  REQUIRE(co.header.e_ident[EI_CLASS] == ELFCLASS64);
  REQUIRE(co.header.e_shentsize == sizeof(Elf64_Shdr));
  for (int i = 0; i < co.header.e_shnum; ++i)
    co.sections.push_back(read_at<Elf64_Shdr>(bytes, size_t(co.header.e_shoff) + size_t(i) * sizeof(Elf64_Shdr)));
  for (const Elf64_Shdr& sec : co.sections) {
    if (sec.sh_type != SHT_SYMTAB && sec.sh_type != SHT_DYNSYM) continue;
    const Elf64_Shdr& strtab = co.sections.at(sec.sh_link);
    for (size_t off = 0; off + sizeof(Elf64_Sym) <= sec.sh_size; off += sizeof(Elf64_Sym)) {
      auto sym = read_at<Elf64_Sym>(bytes, size_t(sec.sh_offset + off));
      REQUIRE(strtab.sh_offset + sym.st_name < bytes.size());
      std::string name(reinterpret_cast<const char*>(bytes.data() + strtab.sh_offset + sym.st_name));
      if (!name.empty()) co.symbols[name] = sym;
    }
  }
  return co;
}

constexpr uint16_t kEmAmdgpu = 224;
constexpr uint8_t kOsAbiAmdgpuHsa = 64;
constexpr uint8_t kAbiVersionHsaV5 = 3;
const std::map<std::string, uint32_t> kMachFlag = {{"gfx90a", 0x3f}, {"gfx942", 0x4c}, {"gfx1100", 0x41}};

// The kernel descriptor fields (llvm/Support/AMDHSAKernelDescriptor.h).
struct KernelDescriptor {
  uint32_t group_segment_fixed_size, private_segment_fixed_size, kernarg_size, rsrc2;
  uint16_t code_properties;
};

// Checks the code object of `ck` and returns its kernel descriptor.
KernelDescriptor check_code_object(const codegen::CompiledKernel& ck) {
  INFO("target " << ck.target << ", kernel " << ck.entry);
  CodeObject co = parse_code_object(ck.binary);
  CHECK(co.header.e_machine == kEmAmdgpu);
  CHECK(co.header.e_type == ET_DYN);  // a shared object: what the HIP loader takes
  CHECK(co.header.e_ident[EI_OSABI] == kOsAbiAmdgpuHsa);
  CHECK(co.header.e_ident[EI_ABIVERSION] == kAbiVersionHsaV5);
  CHECK((co.header.e_flags & 0xff) == kMachFlag.at(ck.target));
  REQUIRE(co.symbols.count(ck.entry) == 1);
  REQUIRE(co.symbols.count(ck.entry + ".kd") == 1);
  CHECK(ELF64_ST_TYPE(co.symbols.at(ck.entry).st_info) == STT_FUNC);
  CHECK(co.symbols.at(ck.entry).st_size > 0);
  std::vector<uint8_t> kd = co.object(ck.entry + ".kd");
  REQUIRE(kd.size() == 64);
  KernelDescriptor d{read_at<uint32_t>(kd, 0), read_at<uint32_t>(kd, 4), read_at<uint32_t>(kd, 8),
                     read_at<uint32_t>(kd, 52), read_at<uint16_t>(kd, 56)};
  // No scratch: no spills, no stack, no private segment enabled.
  CHECK(d.private_segment_fixed_size == 0);
  CHECK((d.rsrc2 & 1u) == 0);  // COMPUTE_PGM_RSRC2.ENABLE_PRIVATE_SEGMENT
  CHECK(((d.code_properties >> 10) & 1u) == (is_wave32(ck.target) ? 1u : 0u));  // ENABLE_WAVEFRONT_SIZE32
  CHECK(((d.code_properties >> 3) & 1u) == 1u);                                 // kernarg segment pointer
  // Dynamic LDS (what the runtime passes at launch) is not in the fixed size.
  CHECK(d.group_segment_fixed_size == 0);
  return d;
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// No scratch memory: no spill or stack instructions, and a kernel that
// declares no private segment.
void check_no_scratch(const std::string& assembly) {
  CHECK_FALSE(contains(assembly, "scratch_load"));
  CHECK_FALSE(contains(assembly, "scratch_store"));
  CHECK_FALSE(contains(assembly, "buffer_store_dword"));  // pre-gfx9-style spills
  CHECK(contains(assembly, ".amdhsa_private_segment_fixed_size 0"));
  // The private segment switch (COMPUTE_PGM_RSRC2 bit 0) is spelled per
  // generation: gfx940+ and gfx11 with architected flat scratch, gfx90a by
  // its wave offset SGPR.
  CHECK((contains(assembly, ".amdhsa_enable_private_segment 0") ||
         contains(assembly, ".amdhsa_system_sgpr_private_segment_wavefront_offset 0")));
}

// True when the assembly branches back to a label defined above the branch.
bool has_backward_branch(const std::string& assembly) {
  std::istringstream in(assembly);
  std::string line;
  std::vector<std::string> seen_labels;
  while (std::getline(in, line)) {
    if (line.rfind(".LBB", 0) == 0 && line.back() == ':') {
      seen_labels.push_back(line.substr(0, line.size() - 1));
      continue;
    }
    if (!contains(line, "s_cbranch") && !contains(line, "s_branch")) continue;
    for (const auto& l : seen_labels)
      if (line.size() >= l.size() && line.compare(line.size() - l.size(), l.size(), l) == 0) return true;
  }
  return false;
}

// The 128-bit global load/store mnemonics of each generation.
std::string load_x4(const std::string& t) { return is_wave32(t) ? "global_load_b128" : "global_load_dwordx4"; }
std::string store_x4(const std::string& t) { return is_wave32(t) ? "global_store_b128" : "global_store_dwordx4"; }

const char* kObjdump = "/usr/bin/llvm-objdump-22";

// Disassembly of a code object, or nullopt without llvm-objdump.
std::optional<std::string> disassemble(const codegen::CompiledKernel& ck) {
  if (access(kObjdump, X_OK) != 0) return std::nullopt;
  auto path = std::filesystem::temp_directory_path() /
              ("tiledsl-test-" + std::to_string(getpid()) + "-" + ck.entry + "." + ck.target + ".hsaco");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(ck.binary.data()), long(ck.binary.size()));
  std::string cmd = std::string(kObjdump) + " -d --mcpu=" + ck.target + " " + path.string() + " 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  std::filesystem::remove(path);
  return out;
}

}  // namespace

TEST_CASE("amdgpu: the AMD targets are registered", "[amdgpu]") {
  for (const auto& t : kTargets) CHECK(codegen::is_known_target(t));
  CHECK_FALSE(codegen::is_known_target("gfx9999"));
}

TEST_CASE("amdgpu: vector_add becomes 128-bit global loads and stores in a V5 code object", "[amdgpu]") {
  Kernel k = compile(amd_vector_add<1024>, {.name = "amd_vector_add"});
  for (const auto& t : kTargets) {
    INFO("target " << t);
    codegen::CompiledKernel ck = compile_for(k, t);
    CHECK(ck.threads == 4 * (is_wave32(t) ? 32 : 64));
    check_code_object(ck);
    CHECK(contains(ck.assembly, ".amdhsa_kernel amd_vector_add"));
    CHECK(contains(ck.assembly, load_x4(t)));
    CHECK(contains(ck.assembly, store_x4(t)));
    check_no_scratch(ck.assembly);
    CHECK(contains(ck.assembly, "s_endpgm"));
  }
}

TEST_CASE("amdgpu: softmax reduces across lanes with DPP and ds_bpermute, across waves through LDS", "[amdgpu]") {
  Kernel k = compile(amd_softmax<1024>, {.name = "amd_softmax"});
  for (const auto& t : kTargets) {
    INFO("target " << t);
    codegen::CompiledKernel ck = compile_for(k, t);
    check_code_object(ck);
    // Lane masks 1 and 2 are DPP quad permutations on every part.
    CHECK(contains(ck.assembly, "quad_perm:[1,0,3,2]"));
    CHECK(contains(ck.assembly, "quad_perm:[2,3,0,1]"));
    if (is_wave32(t)) {
      // gfx11: masks 4 and 8 by row_xmask, 16 by ds_bpermute.
      CHECK(contains(ck.assembly, "row_xmask:4"));
      CHECK(contains(ck.assembly, "row_xmask:8"));
    }
    CHECK(contains(ck.assembly, "ds_bpermute_b32"));
    // Four waves combine their partial max and sum through LDS.
    CHECK(ck.shared_bytes > 0);
    CHECK(contains(ck.assembly, "s_barrier"));
    CHECK(contains(ck.assembly, is_wave32(t) ? "ds_store_b32" : "ds_write_b32"));
    CHECK(contains(ck.assembly, "v_exp_f32"));
    CHECK(contains(ck.assembly, load_x4(t)));
    check_no_scratch(ck.assembly);
  }
}

TEST_CASE("amdgpu: a loop with a carried accumulator keeps it in registers", "[amdgpu]") {
  Kernel k = compile(amd_chunk_sum<512>, {.name = "amd_chunk_sum"});
  for (const auto& t : kTargets) {
    INFO("target " << t);
    codegen::CompiledKernel ck = compile_for(k, t);
    check_code_object(ck);
    CHECK(has_backward_branch(ck.assembly));
    CHECK(contains(ck.assembly, load_x4(t)));
    CHECK(contains(ck.assembly, "add_f32"));  // v_add_f32 (gfx9), v_dual_add_f32 (gfx11)
    // The accumulator never leaves registers: no LDS, no barrier.
    CHECK(ck.shared_bytes == 0);
    CHECK_FALSE(contains(ck.assembly, "s_barrier"));
    check_no_scratch(ck.assembly);
  }
}

TEST_CASE("amdgpu: num_programs divides the dispatch packet's grid size by the work-group size", "[amdgpu]") {
  Kernel k = compile(amd_grid_shape, {.name = "amd_grid_shape"});
  for (const auto& t : kTargets) {
    INFO("target " << t);
    std::string ir = codegen::emit_stage(*k.impl(), aligned_spec(*k.impl()), t, codegen::Stage::Llvm);
    CHECK(contains(ir, "@llvm.amdgcn.dispatch.ptr()"));
    // grid_size_x (u32 at 12) over workgroup_size_x (u16 at 4).
    CHECK(std::regex_search(ir, std::regex(R"(i64 12\n\s*%[\w.]+ = load i32, ptr addrspace\(4\))")));
    CHECK(std::regex_search(ir, std::regex(R"(i64 4\n\s*%[\w.]+ = load i16, ptr addrspace\(4\))")));
    CHECK(contains(ir, "udiv i32"));
    CHECK(contains(ir, "\"amdgpu-flat-work-group-size\"=\"1," + std::to_string(4 * (is_wave32(t) ? 32 : 64)) + "\""));
    CHECK(contains(ir, "!\"amdhsa_code_object_version\", i32 500"));
    codegen::CompiledKernel ck = compile_for(k, t);
    KernelDescriptor d = check_code_object(ck);
    CHECK(((d.code_properties >> 1) & 1u) == 1u);  // ENABLE_SGPR_DISPATCH_PTR
    CHECK(contains(ck.assembly, ".amdhsa_user_sgpr_dispatch_ptr 1"));
  }
  // A kernel that does not ask for the grid does not get the packet pointer.
  Kernel plain = compile(amd_vector_add<1024>, {.name = "amd_vector_add"});
  KernelDescriptor d = check_code_object(compile_for(plain, "gfx942"));
  CHECK(((d.code_properties >> 1) & 1u) == 0u);
}

TEST_CASE("amdgpu: lld links code objects repeatedly in one process", "[amdgpu]") {
  Kernel k = compile(amd_vector_add<1024>, {.name = "amd_vector_add"});
  codegen::CompiledKernel first = compile_for(k, "gfx942");
  codegen::CompiledKernel second = compile_for(k, "gfx942");
  codegen::CompiledKernel other = compile_for(k, "gfx90a");
  check_code_object(first);
  check_code_object(second);
  check_code_object(other);
  CHECK(first.binary == second.binary);  // the link is deterministic
  CHECK(first.binary != other.binary);
}

TEST_CASE("amdgpu: device_print is refused, device_assert traps", "[amdgpu]") {
  Kernel printing = compile(amd_print, {.name = "amd_print"});
  for (const auto& t : kTargets)
    CHECK_THROWS_WITH(compile_for(printing, t), Catch::Contains("device_print is not supported on AMD targets"));
  Kernel asserting = compile(amd_assert, {.name = "amd_assert"});
  for (const auto& t : kTargets) {
    INFO("target " << t);
    codegen::CompiledKernel ck = compile_for(asserting, t);
    check_code_object(ck);
    CHECK(contains(ck.assembly, "s_trap 2"));
  }
}

TEST_CASE("amdgpu: the code object disassembles (llvm-objdump-22)", "[amdgpu]") {
  Kernel k = compile(amd_softmax<1024>, {.name = "amd_softmax"});
  for (const auto& t : kTargets) {
    INFO("target " << t);
    codegen::CompiledKernel ck = compile_for(k, t);
    std::optional<std::string> text = disassemble(ck);
    if (!text) {
      WARN("skipped: " << kObjdump << " is not installed");
      return;
    }
    INFO(*text);
    CHECK(contains(*text, "<amd_softmax>:"));
    CHECK(contains(*text, "ds_bpermute_b32"));
    CHECK(contains(*text, load_x4(t)));
    CHECK(contains(*text, "s_barrier"));
    CHECK(contains(*text, "s_endpgm"));
  }
}

// ---------------------------------------------------------------------- dot
namespace {

// The K of the 16 x 16 matrix instruction each target uses for `in`, or 0
// when dot takes the FMA form there.
int instr_k(const std::string& target, DType in) {
  switch (in) {
    case DType::bf16:
    case DType::f16: return 16;
    case DType::i8: return target == "gfx942" ? 32 : 16;
    case DType::u8: return target == "gfx1100" ? 16 : 0;  // MFMA multiplies signed bytes only
    case DType::f32: return is_wave32(target) ? 0 : 4;     // RDNA3 has no f32 WMMA
    default: return 0;
  }
}

// The instruction's mnemonic in the assembly.
std::string instr_mnemonic(const std::string& target, DType in) {
  static const std::map<std::pair<std::string, DType>, std::string> names = {
      {{"gfx90a", DType::bf16}, "v_mfma_f32_16x16x16bf16_1k"},
      {{"gfx90a", DType::f16}, "v_mfma_f32_16x16x16f16"},
      {{"gfx90a", DType::i8}, "v_mfma_i32_16x16x16i8"},
      {{"gfx90a", DType::f32}, "v_mfma_f32_16x16x4f32"},
      {{"gfx942", DType::bf16}, "v_mfma_f32_16x16x16_bf16"},
      {{"gfx942", DType::f16}, "v_mfma_f32_16x16x16_f16"},
      {{"gfx942", DType::i8}, "v_mfma_i32_16x16x32_i8"},
      {{"gfx942", DType::f32}, "v_mfma_f32_16x16x4_f32"},
      {{"gfx1100", DType::bf16}, "v_wmma_f32_16x16x16_bf16"},
      {{"gfx1100", DType::f16}, "v_wmma_f32_16x16x16_f16"},
      {{"gfx1100", DType::i8}, "v_wmma_i32_16x16x16_iu8"},
      {{"gfx1100", DType::u8}, "v_wmma_i32_16x16x16_iu8"},
  };
  return names.at({target, in});
}

// Lines of `assembly` whose instruction is `mnemonic` (followed by its operands).
int count_instructions(const std::string& assembly, const std::string& mnemonic) {
  std::istringstream in(assembly);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    size_t at = line.find_first_not_of(" \t");
    if (at != std::string::npos && line.compare(at, mnemonic.size() + 1, mnemonic + " ") == 0) ++n;
  }
  return n;
}

bool has_matrix_instruction(const std::string& assembly) {
  return contains(assembly, "v_mfma") || contains(assembly, "v_wmma");
}

// Compiles amd_dot for one element type on every target: the expected
// instruction, once per 16 x 16 x k step of each wave's share of the tile
// (the code is straight-line), or none where dot takes the FMA form.
template <class E, int BM, int BN, int BK, bool IEEE = false>
void check_dot_kernel() {
  constexpr int kWarps = 4;
  const DType in = dtype_v<E>;
  Kernel k = compile(amd_dot<E, BM, BN, BK, IEEE>, {.name = "amd_dot", .num_warps = kWarps});
  for (const auto& t : kTargets) {
    INFO("target " << t << ", dot of " << dtype_name(in) << (IEEE ? " (ieee)" : ""));
    codegen::CompiledKernel ck = compile_for(k, t);
    INFO(ck.assembly);
    check_code_object(ck);
    check_no_scratch(ck.assembly);
    int instr_k_here = IEEE ? 0 : instr_k(t, in);
    if (instr_k_here == 0) {
      CHECK_FALSE(has_matrix_instruction(ck.assembly));
      continue;
    }
    // The operands go through LDS.
    CHECK(ck.shared_bytes > 0);
    CHECK(count_instructions(ck.assembly, instr_mnemonic(t, in)) == BM * BN * BK / (16 * 16 * instr_k_here) / kWarps);
    if (std::optional<std::string> text = disassemble(ck)) {
      INFO(*text);
      CHECK(contains(*text, instr_mnemonic(t, in)));
    }
  }
}

}  // namespace

// The layouts are checked against the formulas written out in
// backends/amdgpu/matrix_unit.cpp (from Triton's and IREE's AMD layouts and
// AMD's RDNA3 WMMA sample), lane by lane, not against the bases that build them.
TEST_CASE("amdgpu: MFMA and WMMA fragment layouts follow the ISA's lane formulas", "[amdgpu]") {
  using ir::kLane;
  using ir::kReg;
  for (const auto& t : kTargets) {
    for (DType in : {DType::bf16, DType::f16, DType::i8, DType::u8, DType::f32, DType::f64}) {
      INFO("target " << t << ", " << dtype_name(in));
      std::optional<codegen::MatrixInstr> mi = codegen::amdgpu::matrix_instr(t, in, /*allow_tf32=*/true);
      const int K = instr_k(t, in);
      if (K == 0) {
        CHECK_FALSE(mi.has_value());
        continue;
      }
      REQUIRE(mi.has_value());
      CHECK(mi->name == instr_mnemonic(t, in));
      CHECK((mi->m == 16 && mi->n == 16 && mi->k == K));
      CHECK(mi->in == in);
      CHECK(mi->acc == (is_float(in) ? DType::f32 : DType::i32));
      const bool wmma = is_wave32(t);
      const int lanes = wmma ? 32 : 64;
      const int per_lane = wmma ? 16 : K / 4;  // A and B elements per lane
      const int acc_regs = wmma ? 8 : 4;
      REQUIRE(mi->a.in_size(kLane) == lanes);
      REQUIRE(mi->b.in_size(kLane) == lanes);
      REQUIRE(mi->c.in_size(kLane) == lanes);
      REQUIRE(mi->a.in_size(kReg) == per_lane);
      REQUIRE(mi->b.in_size(kReg) == per_lane);
      REQUIRE(mi->c.in_size(kReg) == acc_regs);
      for (int l = 0; l < lanes; ++l) {
        INFO("lane " << l);
        for (int j = 0; j < per_lane; ++j) {
          // MFMA: lane group l / 16 holds K / 4 consecutive k; WMMA: all of K, lanes 16-31 copies.
          int k = wmma ? j : per_lane * (l / 16) + j;
          CHECK(mi->a.apply({{kReg, j}, {kLane, l}}) == ir::LinearLayout::Coords{l % 16, k});
          CHECK(mi->b.apply({{kReg, j}, {kLane, l}}) == ir::LinearLayout::Coords{k, l % 16});
        }
        for (int i = 0; i < acc_regs; ++i) {
          int m = wmma ? 2 * i + l / 16 : 4 * (l / 16) + i;
          CHECK(mi->c.apply({{kReg, i}, {kLane, l}}) == ir::LinearLayout::Coords{m, l % 16});
        }
      }
    }
    // Exact f32 products are FMAs on every target.
    CHECK_FALSE(codegen::amdgpu::matrix_instr(t, DType::f32, /*allow_tf32=*/false).has_value());
  }
}

TEST_CASE("amdgpu: dot becomes MFMA on gfx90a and gfx942, WMMA on gfx1100", "[amdgpu]") {
  // 2 x 2 waves, each 2 x 2 instructions along M and N, K in 2 steps (one on
  // gfx942's i8 K = 32, eight on f32's K = 4).
  check_dot_kernel<bf16, 64, 64, 32>();
  check_dot_kernel<f16, 64, 64, 32>();
  check_dot_kernel<int8_t, 64, 64, 32>();
  check_dot_kernel<uint8_t, 64, 64, 32>();
  // f32 is FMAs on gfx1100 (and "ieee" everywhere), whose operands take
  // more registers: a smaller tile keeps them out of scratch.
  check_dot_kernel<float, 32, 32, 32>();
  check_dot_kernel<float, 32, 32, 32, /*IEEE=*/true>();
}

TEST_CASE("amdgpu: the gemm example's K loop runs on MFMA / WMMA without scratch", "[amdgpu]") {
  struct Case {
    std::string config;
    std::vector<std::string> targets;
  };
  // 128x128x64 with 8 waves holds more operand registers than gfx1100's 256
  // VGPRs per wave (WMMA operands are duplicated in both half-waves) and
  // spills there: only the smaller tile is checked on it.
  const Case cases[] = {{"64x64x32:4:3", kTargets}, {"128x128x64:8:3", {"gfx90a", "gfx942"}}};
  // As the runtime specializes a launch on row-major A, B and C of 4096^3:
  // sizes and leading strides multiples of 16, unit strides known to be 1
  // (contiguous, vectorizable loads). Arguments: a, b, c, M, N, K, stride_am,
  // stride_ak, stride_bk, stride_bn, stride_cm, stride_cn.
  codegen::Specialization spec;
  for (int i = 0; i < 3; ++i) spec.args.push_back(codegen::pointer_arg_facts(0x10000));
  for (int64_t v : {4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1}) spec.args.push_back(codegen::int_arg_facts(v));
  for (const Case& c : cases) {
    kernels::GemmConfig cfg = kernels::parse_gemm_config(c.config);
    for (DType in : {DType::bf16, DType::f16}) {
      Kernel k = in == DType::bf16 ? kernels::compile_gemm<bf16>(cfg) : kernels::compile_gemm<f16>(cfg);
      for (const auto& t : c.targets) {
        INFO("target " << t << ", gemm " << dtype_name(in) << " " << c.config);
        REQUIRE(k.impl()->params.size() == spec.args.size());
        codegen::CompiledKernel ck = codegen::compile(*k.impl(), spec, t);
        check_code_object(ck);
        check_no_scratch(ck.assembly);
        CHECK(has_backward_branch(ck.assembly));
        // One K step of the loop body: each wave's share of BM x BN x BK.
        CHECK(count_instructions(ck.assembly, instr_mnemonic(t, in)) ==
              cfg.bm * cfg.bn * cfg.bk / (16 * 16 * 16) / cfg.num_warps);
        if (std::optional<std::string> text = disassemble(ck)) CHECK(contains(*text, instr_mnemonic(t, in)));
      }
    }
  }
}

TEST_CASE("amdgpu: the hip device picks the exact gfx target", "[amdgpu][hip]") {
  auto known = [](const std::string& t) { return codegen::is_known_target(t); };
  CHECK(amdgpu::hip_target_for("gfx942:sramecc+:xnack-", known) == "gfx942");
  CHECK(amdgpu::hip_target_for("gfx90a:sramecc+:xnack-", known) == "gfx90a");
  CHECK(amdgpu::hip_target_for("gfx1100", known) == "gfx1100");
  // Code objects are per gfx version: no silent fallback to a neighbour.
  CHECK_THROWS_WITH(amdgpu::hip_target_for("gfx1030", known),
                    Catch::Contains("AMD GPU gfx1030 is not supported") && Catch::Contains("gfx942"));
}

TEST_CASE("amdgpu: without ROCm the hip device is unavailable and says why", "[amdgpu][hip]") {
  auto devices = detail::available_devices();
  if (std::find(devices.begin(), devices.end(), "hip") != devices.end()) {
    WARN("skipped: a HIP runtime and an AMD GPU are present here");
    return;
  }
  CHECK_THROWS_WITH(Device::get("hip"), Catch::Contains("device 'hip' is not available") &&
                                            Catch::Contains("no AMD GPU") &&
                                            Catch::Contains("libamdhip64.so"));
}
