// The compiler's registration (see compiler.h), the build identities that
// version the kernel cache, and the argument specialization both libraries
// share (codegen::Specialization and its facts, declared in
// codegen/compile.h: the launcher computes them without a compiler).
#include "runtime/compiler.h"

#include <elf.h>
#include <link.h>
#include <sys/stat.h>

#include <cstring>
#include <map>
#include <mutex>

#include "runtime/kernel_cache.h"

namespace tl {

namespace runtime {

namespace {

std::mutex& compiler_mutex() {
  static std::mutex m;
  return m;
}
Compiler*& registered() {
  static Compiler* c = nullptr;
  return c;
}

// The loaded object (a library, or the program it is linked into) that
// holds `address`, and within it the linker's build id: the digest of the
// linked file (ld --build-id), which changes whenever it is rebuilt with any
// change and is the same for the same build in every process and directory.
struct OwnObject {
  uintptr_t address;
  std::string build_id;  // hex, or empty without a build id note
  std::string path;      // the object's file ("" for the main program)
};

int find_own_object(dl_phdr_info* info, size_t, void* data) {
  auto& own = *static_cast<OwnObject*>(data);
  bool holds = false;
  for (int i = 0; i < info->dlpi_phnum && !holds; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    holds = ph.p_type == PT_LOAD && own.address >= lo && own.address < lo + ph.p_memsz;
  }
  if (!holds) return 0;
  own.path = info->dlpi_name ? info->dlpi_name : "";
  static const char* digits = "0123456789abcdef";
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const size_t align = ph.p_align == 8 ? 8 : 4;
    auto pad = [&](size_t n) { return (n + align - 1) / align * align; };
    const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
    const uint8_t* end = p + ph.p_memsz;
    while (size_t(end - p) >= sizeof(ElfW(Nhdr))) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const uint8_t* name = p + sizeof(ElfW(Nhdr));
      const uint8_t* desc = name + pad(note->n_namesz);
      if (desc > end || size_t(end - desc) < note->n_descsz) break;
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        for (size_t j = 0; j < note->n_descsz; ++j) own.build_id += digits[desc[j] >> 4], own.build_id += digits[desc[j] & 15];
        return 1;
      }
      p = desc + pad(note->n_descsz);
    }
  }
  return 1;
}

}  // namespace

std::string build_identity(const void* address) {
  OwnObject own{reinterpret_cast<uintptr_t>(address), {}, {}};
  dl_iterate_phdr(find_own_object, &own);
  if (!own.build_id.empty()) return "build " + own.build_id;
  // Linked without a build id: the file's size and modification time,
  // which a rebuild changes too.
  struct stat st {};
  std::string file = own.path.empty() ? "/proc/self/exe" : own.path;
  if (stat(file.c_str(), &st) != 0) return "build unknown";
  return "file " + std::to_string(st.st_size) + "." + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

void register_compiler(Compiler c) {
  std::lock_guard lock(compiler_mutex());
  delete registered();
  registered() = new Compiler(std::move(c));
}

const Compiler* compiler() {
  std::lock_guard lock(compiler_mutex());
  return registered();
}

const Compiler& require_compiler(const std::string& what) {
  if (const Compiler* c = compiler()) return *c;
  throw Error(what + " needs tiledsl's compiler, and this program has only its runtime library "
              "(libtiledsl_runtime): link tiledsl::tiledsl (pkg-config tiledsl) to compile kernels at run time "
              "(where the program calls nothing of it itself, with --no-as-needed: a linker with --as-needed, "
              "GCC's default on Debian and Ubuntu, drops a library no file calls)");
}

bool known_target(const std::string& target) {
  const Compiler* c = compiler();
  return !c || c->is_known_target(target);
}

// The runtime's build and the compiler's: a binary either compiled (the
// compiler's passes and back ends) or cached and launched (the runtime's
// cache format, parameter passing) differently is never reused.
const std::string& compiler_version() {
  static const std::string v = [] {
    const Compiler* c = compiler();
    return "tiledsl 0.1 runtime " + build_identity(reinterpret_cast<const void*>(&compiler_version)) +
           " compiler " + (c ? c->version : std::string("none"));
  }();
  return v;
}

}  // namespace runtime

namespace codegen {

std::string Specialization::key() const {
  std::string k;
  for (const auto& a : args) {
    if (!k.empty()) k += ",";
    k += a.value ? 'v' : 'd';
    k += std::to_string(a.value ? *a.value : a.divisibility);
  }
  return k;
}

// Triton's classes are 16 and 1; 8 is a class of its own here, so that a
// row of 8 mod 16 two-byte elements (136, 1000, 4008) is still proven a
// multiple of 16 bytes and its blocks can be tensor copies. Binaries
// compiled ahead of time know 16 and 1 only: a launch of class 8 takes a
// "d1" binary (pick_precompiled).
transforms::ArgFacts int_arg_facts(int64_t value) {
  transforms::ArgFacts f;
  if (value == 1) f.value = 1;
  else if (value % 16 == 0) f.divisibility = 16;
  else if (value % 8 == 0) f.divisibility = 8;
  return f;
}

transforms::ArgFacts pointer_arg_facts(uint64_t address) {
  transforms::ArgFacts f;
  if (address % 16 == 0) f.divisibility = 16;
  return f;
}

bool parse_stage(const std::string& name, Stage& out) {
  static const std::map<std::string, Stage> names = {
      {"tile", Stage::Tile}, {"gpu", Stage::Gpu}, {"llvm", Stage::Llvm}, {"asm", Stage::Asm}};
  auto it = names.find(name);
  if (it == names.end()) return false;
  out = it->second;
  return true;
}

}  // namespace codegen

}  // namespace tl
