// The kernel cache (see kernel_cache.h for the key, the file format and the
// concurrency rules) and the SHA-256 it keys by.
#include <algorithm>
#include "runtime/kernel_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "ir/printer.h"
#include "runtime/kernel.h"
#include "tiledsl/detail/ir_types.h"

#ifndef TILEDSL_BUILD_ID
#define TILEDSL_BUILD_ID "dev"
#endif

namespace tl::runtime {

// ---------------------------------------------------------------------------
// SHA-256

namespace {

constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

}  // namespace

Sha256::Sha256()
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void Sha256::block(const uint8_t* p) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 | p[4 * i + 3];
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e, h_[5] += f, h_[6] += g, h_[7] += h;
}

void Sha256::update(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  total_ += bytes;
  while (bytes > 0) {
    size_t take = std::min(bytes, 64 - buf_len_);
    std::memcpy(buf_ + buf_len_, p, take);
    buf_len_ += take, p += take, bytes -= take;
    if (buf_len_ == 64) {
      block(buf_);
      buf_len_ = 0;
    }
  }
}

std::array<uint8_t, 32> Sha256::finish() {
  uint64_t bits = total_ * 8;
  uint8_t pad = 0x80;
  update(&pad, 1);
  uint8_t zero = 0;
  while (buf_len_ != 56) update(&zero, 1);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(bits >> (56 - 8 * i));
  update(len, 8);
  std::array<uint8_t, 32> out;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = uint8_t(h_[i] >> (24 - 8 * j));
  return out;
}

std::array<uint8_t, 32> Sha256::of(const void* data, size_t bytes) {
  Sha256 s;
  s.update(data, bytes);
  return s.finish();
}

std::string Sha256::hex(const std::array<uint8_t, 32>& digest) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : digest) s += digits[b >> 4], s += digits[b & 15];
  return s;
}

// ---------------------------------------------------------------------------
// Keys

const std::string& compiler_version() {
  static const std::string v = std::string("tiledsl 0.1 build ") + TILEDSL_BUILD_ID;
  return v;
}

CacheKey CacheKey::make(std::string_view ir_text, std::string_view options, std::string_view specialization,
                        std::string_view target, std::string_view version) {
  Sha256 s;
  s.update("tiledsl-kernel-key-v1");
  for (std::string_view field : {version, target, options, specialization, ir_text}) {
    uint64_t n = field.size();
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(n >> (8 * i));
    s.update(len, 8);
    s.update(field);
  }
  return CacheKey{s.finish()};
}

CacheKey kernel_cache_key(const detail::KernelImpl& kernel, std::string_view specialization, std::string_view target) {
  // The IR does not change after tracing, so its digest is computed once.
  static std::mutex memo_mutex;
  std::string ir_digest;
  {
    std::lock_guard lock(memo_mutex);
    ir_digest = kernel.ir_digest;
  }
  if (ir_digest.empty()) {
    if (!kernel.fn) throw Error("kernel '" + kernel.name + "' has no function to compile");
    std::string text = ir::print(*kernel.fn);
    ir_digest = Sha256::hex(Sha256::of(text.data(), text.size()));
    std::lock_guard lock(memo_mutex);
    kernel.ir_digest = ir_digest;
  }
  // Every CompileOptions field that can change the generated code. (A new
  // option must be added here, or kernels differing in it would share code.)
  const CompileOptions& o = kernel.options;
  std::string options = "name=" + o.name + ";entry=" + kernel.name + ";num_warps=" + std::to_string(o.num_warps) +
                        ";num_stages=" + std::to_string(o.num_stages) + ";fp_fusion=" + std::to_string(o.fp_fusion) +
                        ";num_ctas=" + std::to_string(o.num_ctas);
  return CacheKey::make(ir_digest, options, specialization, target);
}

// ---------------------------------------------------------------------------
// Entry format

namespace {

constexpr char kMagic[8] = {'T', 'L', 'K', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderBytes = 88;

void put_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint64_t get_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

}  // namespace

Bytes KernelCache::encode_entry(const CacheKey& key, std::span<const uint8_t> payload) {
  Bytes out(kHeaderBytes + payload.size());
  uint8_t* p = out.data();
  std::memcpy(p, kMagic, 8);
  put_le(p + 8, kFormatVersion, 4);
  put_le(p + 12, 0, 4);
  put_le(p + 16, payload.size(), 8);
  auto sum = Sha256::of(payload.data(), payload.size());
  std::memcpy(p + 24, sum.data(), 32);
  std::memcpy(p + 56, key.digest.data(), 32);
  if (!payload.empty()) std::memcpy(p + kHeaderBytes, payload.data(), payload.size());
  return out;
}

std::optional<Bytes> KernelCache::decode_entry(const CacheKey& key, std::span<const uint8_t> file) {
  if (file.size() < kHeaderBytes) return std::nullopt;
  const uint8_t* p = file.data();
  if (std::memcmp(p, kMagic, 8) != 0) return std::nullopt;
  if (get_le(p + 8, 4) != kFormatVersion || get_le(p + 12, 4) != 0) return std::nullopt;
  if (std::memcmp(p + 56, key.digest.data(), 32) != 0) return std::nullopt;
  uint64_t length = get_le(p + 16, 8);
  if (length != file.size() - kHeaderBytes) return std::nullopt;
  auto sum = Sha256::of(p + kHeaderBytes, length);
  if (std::memcmp(p + 24, sum.data(), 32) != 0) return std::nullopt;
  return Bytes(p + kHeaderBytes, p + kHeaderBytes + length);
}

// ---------------------------------------------------------------------------
// The cache

KernelCache::KernelCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

std::filesystem::path KernelCache::default_dir() {
  if (const char* env = std::getenv("TILEDSL_CACHE_DIR"); env && *env) return env;
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "tiledsl";
  return {};
}

KernelCache& KernelCache::global() {
  static KernelCache cache(default_dir());
  return cache;
}

std::filesystem::path KernelCache::entry_path(const CacheKey& key) const {
  if (dir_.empty()) return {};
  return dir_ / (key.hex() + ".tlk");
}

std::optional<Bytes> KernelCache::read_disk(const CacheKey& key) {
  if (dir_.empty()) return std::nullopt;
  auto path = entry_path(key);
  Bytes file;
  {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;  // no entry (or unreadable): a miss
    // Read to end of file in large chunks; the size check is decode_entry's.
    size_t done = 0;
    for (;;) {
      file.resize(done + (1 << 20));
      ssize_t n = ::read(fd, file.data() + done, file.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += size_t(n);
    }
    ::close(fd);
    file.resize(done);
  }
  auto payload = decode_entry(key, file);
  if (!payload) {
    // Truncated, overwritten or foreign: never trusted. Removing it lets the
    // recompiled entry take its place. (If another process has just renamed a
    // good entry here, we remove that one; it is only recompiled later.)
    std::error_code ec;
    std::filesystem::remove(path, ec);
    std::lock_guard lock(stats_mutex_);
    ++stats_.corrupt_entries;
  }
  return payload;
}

bool KernelCache::write_disk(const CacheKey& key, std::span<const uint8_t> bytes) {
  if (dir_.empty()) return false;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return false;
  auto path = entry_path(key);
  // Unique per process and per call, so concurrent writers never share a
  // temporary file; same directory, so rename() is atomic.
  static std::atomic<uint64_t> counter{0};
  auto tmp = path;
  tmp += ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  Bytes file = encode_entry(key, bytes);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  bool ok = true;
  while (done < file.size()) {
    ssize_t n = ::write(fd, file.data() + done, file.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    done += size_t(n);
  }
  // No fsync: a crash may leave a short file under the final name on some
  // file systems, and the checksum catches exactly that.
  if (::close(fd) != 0) ok = false;
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) ok = false;
  if (!ok) std::filesystem::remove(tmp, ec);
  return ok;
}

std::optional<Bytes> KernelCache::get(const CacheKey& key) {
  if (auto hit = memory_.find(key)) {
    std::lock_guard lock(stats_mutex_);
    ++stats_.memory_hits;
    return *hit;
  }
  auto disk = read_disk(key);
  std::lock_guard lock(stats_mutex_);
  if (!disk) {
    ++stats_.misses;
    return std::nullopt;
  }
  ++stats_.disk_hits;
  memory_.put(key, std::make_shared<const Bytes>(*disk));
  return disk;
}

void KernelCache::put(const CacheKey& key, std::span<const uint8_t> bytes) {
  memory_.put(key, std::make_shared<const Bytes>(bytes.begin(), bytes.end()));
  if (!dir_.empty() && !write_disk(key, bytes)) {
    std::lock_guard lock(stats_mutex_);
    ++stats_.disk_write_failures;
  }
}

std::shared_ptr<const Bytes> KernelCache::get_or_compile(const CacheKey& key, const std::function<Bytes()>& compile) {
  bool memory_hit = false;
  auto value = memory_.get_or_create(
      key,
      [&]() -> std::shared_ptr<const Bytes> {
        if (auto disk = read_disk(key)) {
          std::lock_guard lock(stats_mutex_);
          ++stats_.disk_hits;
          return std::make_shared<const Bytes>(std::move(*disk));
        }
        {
          std::lock_guard lock(stats_mutex_);
          ++stats_.misses;
          ++stats_.compiles;
        }
        auto bytes = std::make_shared<const Bytes>(compile());
        if (!dir_.empty() && !write_disk(key, *bytes)) {
          std::lock_guard lock(stats_mutex_);
          ++stats_.disk_write_failures;
        }
        return bytes;
      },
      &memory_hit);
  if (memory_hit) {
    std::lock_guard lock(stats_mutex_);
    ++stats_.memory_hits;
  }
  return value;
}

void KernelCache::clear_memory() { memory_.clear(); }

KernelCache::Stats KernelCache::stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

void KernelCache::reset_stats() {
  std::lock_guard lock(stats_mutex_);
  stats_ = Stats{};
}

Bytes encode_cached_binary(std::string_view device, const CachedBinary& e) {
  std::string head = "tiledsl-" + std::string(device) + "-kernel 1\nentry " + e.entry + "\nthreads " +
                     std::to_string(e.threads) + "\nshared " + std::to_string(e.shared_bytes) + "\n\n";
  Bytes out(head.begin(), head.end());
  out.insert(out.end(), e.binary.begin(), e.binary.end());
  return out;
}

CachedBinary decode_cached_binary(std::string_view device, std::span<const uint8_t> bytes) {
  auto bad = [&] {
    return Error("kernel cache entry for the " + std::string(device) + " device is malformed (delete " +
                 KernelCache::global().dir().string() + " to rebuild the cache)");
  };
  const char* sep = "\n\n";
  auto it = std::search(bytes.begin(), bytes.end(), sep, sep + 2);
  if (it == bytes.end()) throw bad();
  std::string head(bytes.begin(), it + 1);
  CachedBinary e;
  size_t pos = 0;
  for (int line_no = 0; pos < head.size(); ++line_no) {
    size_t nl = head.find('\n', pos);
    std::string line = head.substr(pos, nl - pos);
    pos = nl + 1;
    auto sp = line.find(' ');
    if (sp == std::string::npos) throw bad();
    std::string field = line.substr(0, sp), value = line.substr(sp + 1);
    try {
      if (line_no == 0) {
        if (line != "tiledsl-" + std::string(device) + "-kernel 1") throw bad();
      } else if (field == "entry") {
        e.entry = value;
      } else if (field == "threads") {
        e.threads = std::stoi(value);
      } else if (field == "shared") {
        e.shared_bytes = std::stoi(value);
      } else {
        throw bad();
      }
    } catch (const std::logic_error&) {  // stoi on a damaged number
      throw bad();
    }
  }
  if (e.entry.empty() || e.threads <= 0) throw bad();
  e.binary.assign(it + 2, bytes.end());
  return e;
}

}  // namespace tl::runtime
