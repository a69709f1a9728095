// libFuzzer target: the kernel cache's entry reader (issue 11, section 3).
// Bytes as they would sit in <cache dir>/<key>.tlk go through every check
// the disk reader makes (header, declared length, checksum) and then the
// device payload's parser (header lines, counts, entry symbol), under the
// key the bytes name, so that inputs with a valid checksum reach the
// payload parser. Any input must end in a validated entry or a rejection:
// a crash, a sanitizer report, a hang or an unbounded allocation is a bug.
//
// Seeds: fuzz/seeds/fuzz_cache_entry/ (real entries, written by the unit
// test "kernel cache: the fuzzer's seed entries" when TILEDSL_FUZZ_SEEDS_DIR
// names that folder). Build it with the others (fuzz/CMakeLists.txt), or
// alone, from the top folder:
//   clang++-22 -fsanitize=fuzzer,address -std=c++20 -Iinclude -Ilib
//       fuzz/fuzz_cache_entry.cpp lib/runtime/kernel_cache.cpp
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "runtime/kernel_cache.h"

namespace {

using namespace tl::runtime;

// The reader on one input, with what a valid entry must satisfy.
void read(std::span<const uint8_t> bytes) {
  for (const char* device : {"cuda", "hip"}) {
    auto entry = read_entry_bytes(device, bytes);
    if (!entry) continue;
    // What a launch relies on, promised by decode_cached_binary.
    if (entry->entry.empty() || entry->threads < 1 || entry->threads > 1024 || entry->shared_bytes < 0 ||
        entry->binary.empty())
      std::abort();
    // A valid entry is exactly what its fields encode to: the reader accepts
    // one spelling of each entry, the writer's.
    CacheKey key;
    std::memcpy(key.digest.data(), bytes.data() + 56, 32);
    Bytes again = KernelCache::encode_entry(key, encode_cached_binary(device, *entry));
    if (again.size() != bytes.size() || std::memcmp(again.data(), bytes.data(), bytes.size()) != 0) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  read(bytes);
  // The same bytes with the checksum the header should have for them: a
  // mutated payload of a seed then passes the checksum (which the fuzzer
  // cannot compute) and reaches the length and payload checks.
  if (size >= kEntryHeaderBytes) {
    Bytes fixed(data, data + size);
    auto sum = Sha256::of(fixed.data() + kEntryHeaderBytes, size - kEntryHeaderBytes);
    std::memcpy(fixed.data() + 24, sum.data(), 32);
    read(fixed);
  }
  return 0;
}
