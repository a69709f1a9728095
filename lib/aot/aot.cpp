// The ahead-of-time compiler (tiledsl/aot.h): each kernel compiled for each
// of its targets and specializations, on worker threads, and written as a
// C++ header and source that hold the binaries and the Tile IR as string
// literals and call tl::load_precompiled (tiledsl/precompiled.h) on first
// use. The binaries are what a JIT launch would cache (a device's
// CachedBinary: entry, block size, shared memory, tensor maps and the
// binary), so the runtime loads them through the same checks: NVIDIA's as
// PTX, which the driver assembles when the module is loaded; AMD's as code
// objects.
#include "tiledsl/aot.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "aot/aot.h"
#include "codegen/target_info.h"
#include "ir/ir.h"
#include "runtime/kernel_cache.h"

namespace tl::aot {

std::string device_of(const std::string& target) {
  return codegen::is_known_target(target) ? codegen::get_target_info(target).device : "";
}

namespace {

// A name the generated C++ can declare: an identifier and no keyword.
bool is_identifier(const std::string& s) {
  static const std::set<std::string, std::less<>> keywords = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
      "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
      "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
      "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
      "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
      "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
      "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename",
      "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"};
  return ir::is_identifier(s) && !keywords.count(s);
}

std::string signature(const detail::KernelImpl& k) {
  std::string s;
  for (const auto& p : k.params) s += (s.empty() ? "" : ", ") + p.str();
  return "(" + s + ")";
}

// "16,1,-" for kernel `k` as the facts the launcher specializes by.
codegen::Specialization parse_specialization(const KernelSpec& ks, const std::string& text) {
  const detail::KernelImpl& k = *ks.kernel.impl();
  codegen::Specialization spec;
  std::vector<std::string> entries;
  if (!text.empty()) {
    std::stringstream in(text);
    for (std::string e; std::getline(in, e, ',');) entries.push_back(e);
    if (text.back() == ',') entries.push_back("");
  } else {
    entries.assign(k.params.size(), "-");
  }
  auto fail = [&](const std::string& what) {
    throw Error("aot: kernel '" + ks.symbol + "' (" + k.name + signature(k) + "): specialization \"" + text +
                "\": " + what);
  };
  if (entries.size() != k.params.size())
    fail("expected " + std::to_string(k.params.size()) + " comma-separated entries, one per parameter, found " +
         std::to_string(entries.size()));
  for (size_t i = 0; i < entries.size(); ++i) {
    const ir::Type& t = k.params[i];
    const bool integer = !t.is_ptr && is_int(t.dtype);
    transforms::ArgFacts f;
    if (entries[i] == "16" && (t.is_ptr || integer)) f.divisibility = 16;
    else if (entries[i] == "1" && integer) f.value = 1;
    else if (entries[i] != "-")
      fail("entry " + std::to_string(i + 1) + " of parameter type " + t.str() + ": expected " +
           (t.is_ptr ? "16 or -" : integer ? "16, 1 or -" : "-") + ", found '" + entries[i] + "'");
    spec.args.push_back(f);
  }
  return spec;
}

// `bytes` as adjacent C++ string literals, a line each of at most ~100
// characters (and at each newline of text): printable characters as
// themselves, the rest as three-digit octal escapes (which never run into
// a following digit).
std::string literal(std::string_view bytes) {
  std::string out = "\"";
  size_t line = 0;
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') out += '\\', out += char(c), line += 2;
    else if (c >= 0x20 && c < 0x7f) out += char(c), ++line;
    else if (c == '\n') out += "\\n", line = 100;
    else {
      char esc[5];
      std::snprintf(esc, sizeof esc, "\\%03o", unsigned(c));
      out += esc;
      line += 4;
    }
    if (line >= 100) out += "\"\n    \"", line = 0;
  }
  return out + "\"";
}

// Statements setting `var`'s fields to `o`'s.
std::string options_statements(const std::string& var, const CompileOptions& o) {
  std::string ws = o.warp_specialize ? (*o.warp_specialize ? "true" : "false") : "std::nullopt";
  return "    " + var + ".name = " + literal(o.name) + ";\n    " + var + ".num_warps = " + std::to_string(o.num_warps) +
         ";\n    " + var + ".num_stages = " + std::to_string(o.num_stages) + ";\n    " + var +
         ".fp_fusion = " + (o.fp_fusion ? "true" : "false") + ";\n    " + var +
         ".flush_denormals = " + (o.flush_denormals ? "true" : "false") + ";\n    " + var +
         ".num_ctas = " + std::to_string(o.num_ctas) + ";\n    " + var + ".warp_specialize = " + ws + ";\n    " +
         var + ".programs_per_sm = " + std::to_string(o.programs_per_sm) + ";\n";
}

// One binary to make.
struct Job {
  size_t kernel = 0;
  size_t spec_index = 0;  // in the kernel's specializations
  std::string target{};
  codegen::Specialization spec{};
  std::string payload{};  // encode_cached_binary's bytes
  size_t binary_bytes = 0;
  std::string binary{};   // the binary alone, for binaries_dir
  std::string assembly{}, kind{};
  double ms = 0;
  std::string error{};
};

void compile_job(const KernelSpec& ks, const std::string& ptxas, Job& job) {
  auto t0 = std::chrono::steady_clock::now();
  try {
    Precompiled p = precompile(*ks.kernel.impl(), job.spec, job.target, ptxas);
    job.payload.assign(p.payload.begin(), p.payload.end());
    job.binary = std::move(p.binary);
    job.assembly = std::move(p.assembly);
    job.kind = std::move(p.kind);
    job.binary_bytes = p.binary_bytes;
  } catch (const std::exception& err) {
    job.error = err.what();
  }
  job.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    if (!f) throw Error("aot: cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error("aot: cannot write " + path.string() + ": " + ec.message());
}

}  // namespace

Precompiled precompile(const detail::KernelImpl& k, const codegen::Specialization& spec, const std::string& target,
                       const std::string& ptxas) {
  codegen::CompiledKernel ck = codegen::compile(k, spec, target);
  runtime::CachedBinary e;
  e.entry = ck.entry;
  e.threads = ck.threads;
  e.shared_bytes = ck.shared_bytes;
  e.tensor_maps = ck.tensor_maps;
  Precompiled out;
  out.assembly = ck.assembly;
  const codegen::TargetInfo& info = codegen::get_target_info(target);
  const bool ptx = info.asm_language == "ptx";
  if (ptx && !ptxas.empty()) {
    out.binary = info.assemble_with(ptxas, ck.assembly, k.name);
    out.kind = "cubin";
    e.binary.assign(out.binary.begin(), out.binary.end());
  } else if (ptx) {
    // PTX, which cuModuleLoadData takes NUL-terminated.
    e.binary.assign(ck.assembly.begin(), ck.assembly.end());
    e.binary.push_back(0);
    out.binary = std::move(ck.assembly);
    out.kind = "ptx";
  } else {
    e.binary = std::move(ck.binary);
    out.binary.assign(e.binary.begin(), e.binary.end());
    out.kind = "hsaco";
  }
  out.binary_bytes = e.binary.size();
  out.payload = runtime::encode_cached_binary(device_of(target), e);
  return out;
}

std::vector<Generated> generate(const std::vector<KernelSpec>& kernels, const Options& options) {
  if (options.output.empty()) throw Error("aot: no output file (Options::output, --output=FILE.cpp)");
  if (options.targets.empty()) throw Error("aot: no targets (Options::targets, --targets=sm_90a,gfx942,...)");
  if (!options.name_space.empty()) {
    std::stringstream in(options.name_space);
    for (std::string part; std::getline(in, part, ':');)
      if (!part.empty() && (!is_identifier(part) || part == "std" || part == "tl"))
        throw Error("aot: namespace '" + options.name_space +
                    "' is not a C++ namespace name the generated file can use (identifiers, no keywords, not std or tl)");
  }
  for (const auto& t : options.targets)
    if (device_of(t).empty()) {
      std::string known;
      for (const auto& a : codegen::available_targets())
        if (!device_of(a).empty()) known += " " + a;
      throw Error("aot: unknown target '" + t + "' (expected one of:" + known + ")");
    }

  // Every (kernel, target, specialization), checked before anything compiles.
  std::vector<Job> jobs;
  std::set<std::string> symbols;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelSpec& ks = kernels[i];
    if (!is_identifier(ks.symbol))
      throw Error("aot: kernel symbol '" + ks.symbol + "' is not a C++ identifier (or is a keyword)");
    // Functions of the global namespace the generated file cannot declare.
    if (options.name_space.empty() && (ks.symbol == "main" || ks.symbol == "std" || ks.symbol == "tl"))
      throw Error("aot: kernel symbol '" + ks.symbol + "' cannot be a function of the global namespace (it is " +
                  (ks.symbol == "main" ? "the program's entry" : "a namespace the generated file uses") +
                  "): give another, or a namespace (Options::name_space, --namespace=NS)");
    if (!symbols.insert(ks.symbol).second) throw Error("aot: kernel symbol '" + ks.symbol + "' is given twice");
    if (!ks.kernel.impl()) throw Error("aot: kernel '" + ks.symbol + "' is empty (give it tl::compile(...))");
    if (!ks.kernel.impl()->precompiled.empty())
      throw Error("aot: kernel '" + ks.symbol + "' is itself precompiled; give the traced kernel");
    std::vector<std::string> targets = ks.targets.empty() ? options.targets : ks.targets;
    for (const auto& t : targets)
      if (std::find(options.targets.begin(), options.targets.end(), t) == options.targets.end())
        throw Error("aot: kernel '" + ks.symbol + "' names target '" + t + "', which is not among --targets");
    std::vector<std::string> specs = ks.specializations.empty() ? std::vector<std::string>{""} : ks.specializations;
    for (const auto& t : targets)
      for (size_t s = 0; s < specs.size(); ++s)
        jobs.push_back(Job{.kernel = i, .spec_index = s, .target = t, .spec = parse_specialization(ks, specs[s])});
  }

  // Compiles on worker threads (codegen::compile is thread-safe).
  std::atomic<size_t> next{0};
  unsigned n = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  n = unsigned(std::min<size_t>(n, jobs.size()));
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < n; ++w)
    workers.emplace_back([&] {
      for (size_t j; (j = next++) < jobs.size();) compile_job(kernels[jobs[j].kernel], options.ptxas, jobs[j]);
    });
  for (auto& w : workers) w.join();
  for (const auto& j : jobs)
    if (!j.error.empty())
      throw Error("aot: kernel '" + kernels[j.kernel].symbol + "' for " + j.target + " [" + j.spec.key() + "]: " +
                  j.error);

  const std::filesystem::path source = options.output;
  if (!is_identifier(source.stem().string()) || symbols.count(source.stem().string()))
    throw Error("aot: the output's name, '" + source.stem().string() +
                "', names the generated lookup function: it must be a C++ identifier and no kernel's symbol");
  std::filesystem::path header = source;
  header.replace_extension(".h");
  std::string open_ns = options.name_space.empty() ? "" : "namespace " + options.name_space + " {\n";
  std::string close_ns = options.name_space.empty() ? "" : "}  // namespace " + options.name_space + "\n";
  const std::string banner = "// Generated by tiledsl's ahead-of-time compiler (tiledsl/aot.h): do not edit.\n";

  std::string h = banner + "#pragma once\n\n#include <string_view>\n\n#include <tiledsl/precompiled.h>\n\n" + open_ns;
  std::string data = banner + "#include \"" + header.filename().string() + "\"\n\n#include <cstdint>\n#include <optional>\n#include <string>\n\nnamespace {\n";
  std::string accessors;
  std::vector<Generated> out;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelSpec& ks = kernels[i];
    const detail::KernelImpl& k = *ks.kernel.impl();
    std::string prefix = "k_" + ks.symbol;
    data += "const char " + prefix + "_ir[] =\n    " + literal(ks.kernel.ir()) + ";\n";
    std::string binaries, listed;
    int b = 0;
    for (const auto& j : jobs) {
      if (j.kernel != i) continue;
      std::string name = prefix + "_" + std::to_string(b);
      data += "const char " + name + "[] =\n    " + literal(j.payload) + ";\n";
      binaries += "        {\"" + device_of(j.target) + "\", \"" + j.target + "\", \"" + j.spec.key() +
                  "\", {reinterpret_cast<const uint8_t*>(" + name + "), sizeof " + name + " - 1}},\n";
      listed += "//   " + j.target + " [" + j.spec.key() + "]: " + std::to_string(j.binary_bytes) + " bytes\n";
      Generated g{ks.symbol, j.target, j.spec.key(), j.binary_bytes, j.ms, ""};
      if (!options.binaries_dir.empty()) {
        std::filesystem::create_directories(options.binaries_dir);
        auto base = std::filesystem::path(options.binaries_dir) /
                    (ks.symbol + "." + j.target + "." + std::to_string(j.spec_index));
        g.file = base.string() + "." + j.kind;
        write_file(g.file, j.binary);
        // A cubin's PTX beside it, for reading.
        if (j.kind == "cubin") write_file(base.string() + ".ptx", j.assembly);
      }
      out.push_back(g);
      ++b;
    }
    h += "// Kernel '" + k.name + "'" + signature(k) + ", " + std::to_string(k.options.num_warps) +
         " warps; its binaries:\n" + listed + "tl::Kernel " + ks.symbol + "();\n\n";
    accessors += "tl::Kernel " + ks.symbol + "() {\n  static const tl::Kernel k = [] {\n    tl::PrecompiledKernel p;\n" +
                 options_statements("p.options", k.options) + "    p.tile_ir = {" + prefix + "_ir, sizeof " + prefix +
                 "_ir - 1};\n    p.binaries = {\n" + binaries + "    };\n    return tl::load_precompiled(p);\n  }();\n" +
                 "  return k;\n}\n\n";
  }
  // Every kernel by its symbol, for programs that pick one at run time.
  const std::string find = source.stem().string();
  h += "// The kernel whose accessor is named `symbol`; a tl::Error listing them for\n// any other name.\n"
       "tl::Kernel " + find + "(std::string_view symbol);\n" + close_ns;
  std::string names, cases;
  for (const auto& ks : kernels) {
    names += (names.empty() ? "" : ", ") + ks.symbol;
    cases += "  if (symbol == \"" + ks.symbol + "\") return " + ks.symbol + "();\n";
  }
  accessors += "tl::Kernel " + find + "(std::string_view symbol) {\n" + cases +
               "  throw tl::Error(\"" + find + ": no kernel '\" + std::string(symbol) + \"' (there are: " + names +
               ")\");\n}\n";
  data += "}  // namespace\n\n" + open_ns + "\n" + accessors + close_ns;
  write_file(header, h);
  write_file(source, data);
  return out;
}

int main(int argc, char** argv, const std::vector<KernelSpec>& kernels) {
  Options o;
  bool quiet = false;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&](const std::string& flag) -> std::optional<std::string> {
        if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
        return std::nullopt;
      };
      if (auto v = value("--targets")) {
        std::stringstream in(*v);
        for (std::string t; std::getline(in, t, ',');)
          if (!t.empty()) o.targets.push_back(t);
      } else if (auto v = value("--output")) {
        o.output = *v;
      } else if (auto v = value("--namespace")) {
        o.name_space = *v;
      } else if (auto v = value("--binaries")) {
        o.binaries_dir = *v;
      } else if (auto v = value("--ptxas")) {
        o.ptxas = *v;
      } else if (a == "--quiet") {
        quiet = true;
      } else {
        throw Error("aot: unknown argument '" + a +
                    "' (expected --targets=T1,T2,... --output=FILE.cpp [--namespace=NS] [--binaries=DIR] [--ptxas=PATH] "
                    "[--quiet])");
      }
    }
    auto t0 = std::chrono::steady_clock::now();
    auto generated = generate(kernels, o);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!quiet) {
      size_t total = 0;
      for (const auto& g : generated) {
        std::printf("aot: %-24s %-7s [%s] %zu bytes, %.0f ms\n", g.symbol.c_str(), g.target.c_str(),
                    g.specialization.c_str(), g.bytes, g.compile_ms);
        total += g.bytes;
      }
      std::printf("aot: %zu binaries, %zu bytes, in %.0f ms -> %s\n", generated.size(), total, ms, o.output.c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}

}  // namespace tl::aot
