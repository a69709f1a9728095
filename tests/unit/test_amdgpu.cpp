// The AMD back end (backends/amdgpu) without an AMD GPU: traced kernels are
// compiled for gfx90a, gfx942 (wave64) and gfx1100 (wave32), and what comes
// out is read back: the code object's ELF header (machine, code object V5,
// the GPU in e_flags), its kernel symbol and 64-byte kernel descriptor (no
// scratch, wave size, the dispatch-pointer SGPR when num_programs reads the
// packet), and the AMDGCN assembly (vector loads, DPP / ds_bpermute in the
// reductions, barriers, a loop). When llvm-objdump-22 is installed the code
// object is also disassembled. The "hip" device is checked where ROCm is
// absent: it must say so clearly.
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

#include "amdgpu/hip_device.h"
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
