// Helpers of the kernel cache tests (test_kernel_cache*.cpp): SHA-256 in
// hex, files as bytes, a test key and binary, counting temporaries and
// occurrences, a small kernel.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "runtime/kernel_cache.h"
#include "tiledsl/tiledsl.h"

namespace kernel_cache_test {

using tl::runtime::Bytes;
using tl::runtime::CacheKey;
using tl::runtime::Sha256;
namespace fs = std::filesystem;

inline std::string sha_hex(std::string_view s) { return Sha256::hex(Sha256::of(s.data(), s.size())); }

inline Bytes bytes_of(std::string_view s) { return Bytes(s.begin(), s.end()); }

inline Bytes read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
inline void write_file(const fs::path& p, const Bytes& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

inline int count_temporaries(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().string().find(".tmp.") != std::string::npos) ++n;
  return n;
}

inline CacheKey test_key(std::string_view ir = "ir") { return CacheKey::make(ir, "opts", "d16,v1", "sm_90a", "test-version"); }

template <int BLOCK>
inline void scale_kernel(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                                          // [BLOCK] i1
  tl::store(x + offs, tl::load(x + offs, mask) * 2.0f, mask);
}

// Occurrences of `what` in `text`.
inline int count_occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// A device payload whose binary is `tag` repeated, as a GPU device caches it.
inline tl::runtime::CachedBinary binary_of(std::string_view tag) {
  tl::runtime::CachedBinary e{"kernel_entry", 128, 0, {}};
  for (int i = 0; i < 64; ++i) e.binary.insert(e.binary.end(), tag.begin(), tag.end());
  return e;
}

}  // namespace kernel_cache_test
