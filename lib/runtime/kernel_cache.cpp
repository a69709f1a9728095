// The kernel cache (see kernel_cache.h for the key, the file format, what
// the disk reader trusts and the concurrency rules) and the SHA-256 it keys
// by. Needs no IR: the key of a traced kernel is in kernel_cache_key.cpp,
// so this file alone is the fuzzer's target (fuzz/fuzz_cache_entry.cpp).
#include "runtime/kernel_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "tiledsl/detail/ir_types.h"

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

// ---------------------------------------------------------------------------
// Entry format

namespace {

constexpr char kMagic[8] = {'T', 'L', 'K', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderBytes = kEntryHeaderBytes;

void put_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint64_t get_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

template <class T>
std::nullopt_t reject(std::string* why, T&& reason) {
  if (why) *why = std::forward<T>(reason);
  return std::nullopt;
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

std::optional<uint64_t> KernelCache::check_header(const CacheKey& key, std::span<const uint8_t> header,
                                                  std::string* why) {
  if (header.size() < kHeaderBytes)
    return reject(why, "shorter than an entry's header (" + std::to_string(header.size()) + " bytes)");
  const uint8_t* p = header.data();
  if (std::memcmp(p, kMagic, 8) != 0) return reject(why, "not a tiledsl cache entry (no TLKCACHE magic)");
  if (uint64_t v = get_le(p + 8, 4); v != kFormatVersion)
    return reject(why, "format version " + std::to_string(v) + ", expected " + std::to_string(kFormatVersion));
  if (get_le(p + 12, 4) != 0) return reject(why, "reserved header field is not 0");
  if (std::memcmp(p + 56, key.digest.data(), 32) != 0) return reject(why, "an entry of another key");
  uint64_t length = get_le(p + 16, 8);
  if (length > kMaxPayloadBytes)
    return reject(why, "declares a payload of " + std::to_string(length) + " bytes, over the maximum of " +
                           std::to_string(kMaxPayloadBytes));
  return length;
}

std::optional<Bytes> KernelCache::decode_entry(const CacheKey& key, std::span<const uint8_t> file, std::string* why) {
  auto length = check_header(key, file, why);
  if (!length) return std::nullopt;
  if (*length != file.size() - kHeaderBytes)
    return reject(why, "declares a payload of " + std::to_string(*length) + " bytes but holds " +
                           std::to_string(file.size() - kHeaderBytes));
  const uint8_t* p = file.data();
  auto sum = Sha256::of(p + kHeaderBytes, *length);
  if (std::memcmp(p + 24, sum.data(), 32) != 0) return reject(why, "payload checksum mismatch");
  return Bytes(p + kHeaderBytes, p + kHeaderBytes + *length);
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

namespace {

// Reads exactly `bytes` into `out` unless the file ends first (or errs):
// returns the count read.
size_t read_fully(int fd, uint8_t* out, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::read(fd, out + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += size_t(n);
  }
  return done;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

void KernelCache::reject_disk_entry(const std::filesystem::path& path) {
  // Truncated, overwritten, foreign, or not a file at all: never trusted.
  // Removing it (a link itself, never its target; a directory only if empty)
  // lets the recompiled entry take its place. (If another process has just
  // renamed a good entry here, we remove that one; it is only recompiled
  // later.)
  std::error_code ec;
  std::filesystem::remove(path, ec);
  std::lock_guard lock(stats_mutex_);
  ++stats_.corrupt_entries;
}

std::optional<Bytes> KernelCache::read_disk(const CacheKey& key, const PayloadCheck& check) {
  if (dir_.empty()) return std::nullopt;
  auto path = entry_path(key);
  Fd f;
  // O_NOFOLLOW: a symbolic link is not an entry we wrote (and may point at
  // /dev/zero); O_NONBLOCK: opening a FIFO must not wait for a writer.
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (f.fd < 0) {
    // No entry, or one we may not read (the write replaces it): a miss.
    if (errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == EPERM) return std::nullopt;
    reject_disk_entry(path);  // ELOOP (a link), ENXIO (a socket), ...
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode) || uint64_t(st.st_size) < kHeaderBytes) {
    reject_disk_entry(path);
    return std::nullopt;
  }
  // The header first: a file that is not an entry of this key, or declares
  // a length its size does not match, is rejected before its payload is read.
  Bytes file(kHeaderBytes);
  if (read_fully(f.fd, file.data(), kHeaderBytes) != kHeaderBytes) {
    reject_disk_entry(path);
    return std::nullopt;
  }
  auto length = check_header(key, file);
  if (!length || uint64_t(st.st_size) != kHeaderBytes + *length) {
    reject_disk_entry(path);
    return std::nullopt;
  }
  // Bounded by the header's length (itself at most kMaxPayloadBytes); one
  // byte more shows a file that grew after the fstat.
  file.resize(kHeaderBytes + size_t(*length) + 1);
  size_t got = read_fully(f.fd, file.data() + kHeaderBytes, size_t(*length) + 1);
  file.resize(kHeaderBytes + got);
  auto payload = decode_entry(key, file);
  if (!payload || (check && !check(*payload))) {
    reject_disk_entry(path);
    return std::nullopt;
  }
  return payload;
}

std::string KernelCache::write_disk(const CacheKey& key, std::span<const uint8_t> bytes) {
  std::error_code ec;
  if (std::filesystem::exists(dir_, ec) && !std::filesystem::is_directory(dir_, ec)) return "it is not a directory";
  std::filesystem::create_directories(dir_, ec);
  if (ec) return "cannot create it: " + ec.message();
  auto path = entry_path(key);
  // Unique per process and per call, so concurrent writers never share a
  // temporary file; same directory, so rename() is atomic.
  static std::atomic<uint64_t> counter{0};
  auto tmp = path;
  tmp += ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  Bytes file = encode_entry(key, bytes);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create a file in it: " + std::string(std::strerror(errno));
  std::string error;
  size_t done = 0;
  while (done < file.size()) {
    long n = write_ ? write_(fd, file.data() + done, file.size() - done)
                    : long(::write(fd, file.data() + done, file.size() - done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = "writing an entry failed: " + std::string(n < 0 ? std::strerror(errno) : "no progress");
      break;
    }
    done += size_t(n);
  }
  // No fsync: a crash may leave a short file under the final name on some
  // file systems, and the checksum catches exactly that.
  if (::close(fd) != 0 && error.empty()) error = "writing an entry failed: " + std::string(std::strerror(errno));
  if (error.empty() && std::rename(tmp.c_str(), path.c_str()) != 0)
    error = "cannot rename an entry into place: " + std::string(std::strerror(errno));
  if (!error.empty()) std::filesystem::remove(tmp, ec);  // no partial file left behind
  return error;
}

void KernelCache::save(const CacheKey& key, std::span<const uint8_t> bytes) {
  if (dir_.empty()) return;
  std::string error = write_disk(key, bytes);
  if (error.empty()) return;
  std::lock_guard lock(stats_mutex_);
  ++stats_.disk_write_failures;
  if (!write_warning_.empty()) return;
  // Once per cache: the kernel still runs (from memory), but every process
  // will recompile it, which a user would otherwise never learn.
  write_warning_ = "tiledsl: warning: kernel cache folder " + dir_.string() + ": " + error +
                   "; compiled kernels are kept in memory only and recompiled by every process "
                   "(set TILEDSL_CACHE_DIR to a writable folder)";
  std::fprintf(stderr, "%s\n", write_warning_.c_str());
}

bool KernelCache::always_compile() {
  auto set = [](const char* name) {
    const char* v = std::getenv(name);
    return v && *v && std::strcmp(v, "0") != 0;
  };
  return set("TILEDSL_ALWAYS_COMPILE") || set("TILEDSL_DUMP");
}

std::optional<Bytes> KernelCache::get(const CacheKey& key) {
  if (auto hit = memory_.find(key)) {
    std::lock_guard lock(stats_mutex_);
    ++stats_.memory_hits;
    return *hit;
  }
  auto disk = read_disk(key, {});
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
  save(key, bytes);
}

std::shared_ptr<const Bytes> KernelCache::get_or_compile(const CacheKey& key, const std::function<Bytes()>& compile,
                                                         const PayloadCheck& check) {
  bool memory_hit = false;
  auto value = memory_.get_or_create(
      key,
      [&]() -> std::shared_ptr<const Bytes> {
        if (auto disk = always_compile() ? std::nullopt : read_disk(key, check)) {
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
        save(key, *bytes);
        return bytes;
      },
      &memory_hit);
  if (memory_hit) {
    std::lock_guard lock(stats_mutex_);
    ++stats_.memory_hits;
  }
  return value;
}

void KernelCache::evict(const CacheKey& key) {
  memory_.erase(key);
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove(entry_path(key), ec);
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

std::string KernelCache::write_warning() const {
  std::lock_guard lock(stats_mutex_);
  return write_warning_;
}

void KernelCache::set_write_function(WriteFunction write) { write_ = write; }

// ---------------------------------------------------------------------------
// A device's payload

std::string tensor_map_line(const TensorMapParam& m) {
  // "a2" (an argument), "300" (a constant), "64*a2*a3" (a product).
  auto operand = [](const TensorMapParam::Operand& o) {
    std::string t = o.args.empty() || o.value != 1 ? std::to_string(o.value) : "";
    for (int a : o.args) t += (t.empty() ? "a" : "*a") + std::to_string(a);
    return t;
  };
  std::string s = std::string(dtype_name(m.dtype)) + " " + std::to_string(m.base_arg) + " " + std::to_string(m.box.size());
  for (const auto& o : m.sizes) s += " " + operand(o);
  for (const auto& o : m.strides) s += " " + operand(o);
  for (int64_t b : m.box) s += " " + std::to_string(b);
  return s + " " + std::to_string(m.swizzle_bytes);
}

std::optional<TensorMapParam> parse_tensor_map_line(std::string_view s) {
  std::vector<std::string_view> f;
  while (!s.empty() && f.size() <= 32) {
    size_t sp = s.find(' ');
    f.push_back(s.substr(0, sp));
    s = sp == std::string_view::npos ? std::string_view() : s.substr(sp + 1);
  }
  auto integer = [](std::string_view t, int64_t lo, int64_t hi) -> std::optional<int64_t> {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size() || v < lo || v > hi) return std::nullopt;
    return v;
  };
  constexpr int64_t kMaxArg = 1023;
  TensorMapParam m;
  if (f.size() < 3 || !dtype_from_name(f[0], m.dtype)) return std::nullopt;
  auto base = integer(f[1], 0, kMaxArg);
  auto rank = integer(f[2], 1, 5);
  if (!base || !rank || f.size() != size_t(3 + 3 * *rank + 1)) return std::nullopt;
  m.base_arg = int(*base);
  size_t r = size_t(*rank);
  for (size_t i = 0; i < 2 * r; ++i) {
    // Factors joined by '*': a constant first (where not 1), then arguments.
    std::string_view t = f[3 + i];
    TensorMapParam::Operand o;
    for (size_t n = 0;; ++n) {
      size_t star = t.find('*');
      std::string_view factor = t.substr(0, star);
      if (factor.starts_with("a")) {
        auto a = integer(factor.substr(1), 0, kMaxArg);
        if (!a || o.args.size() >= 8) return std::nullopt;
        o.args.push_back(int(*a));
      } else {
        auto v = integer(factor, INT64_MIN, INT64_MAX);
        if (!v || n > 0) return std::nullopt;
        o.value = *v;
      }
      if (star == std::string_view::npos) break;
      t = t.substr(star + 1);
    }
    (i < r ? m.sizes : m.strides).push_back(o);
  }
  for (size_t i = 0; i < r; ++i) {
    auto b = integer(f[3 + 2 * r + i], 1, 256);
    if (!b) return std::nullopt;
    m.box.push_back(*b);
  }
  auto sw = integer(f.back(), 0, 128);
  if (!sw || (*sw != 0 && *sw != 32 && *sw != 64 && *sw != 128)) return std::nullopt;
  m.swizzle_bytes = int(*sw);
  return m;
}

Bytes encode_cached_binary(std::string_view device, const CachedBinary& e) {
  std::string head = "tiledsl-" + std::string(device) + "-kernel 1\nentry " + e.entry + "\nthreads " +
                     std::to_string(e.threads) + "\nshared " + std::to_string(e.shared_bytes) + "\n";
  for (const auto& m : e.tensor_maps) head += "map " + tensor_map_line(m) + "\n";
  head += "\n";
  Bytes out(head.begin(), head.end());
  out.insert(out.end(), e.binary.begin(), e.binary.end());
  return out;
}

namespace {

// A decimal count as the encoder writes it: digits only, no leading zero,
// at most 9 of them (so it fits an int).
std::optional<int> parse_count(std::string_view s) {
  if (s.empty() || s.size() > 9 || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// The value of the header line "<field> <value>\n" at `pos`, advancing
// `pos` past it; nullopt when the line is not that field.
std::optional<std::string_view> header_line(std::string_view text, size_t& pos, std::string_view field) {
  if (text.substr(pos, field.size()) != field || text.substr(pos + field.size(), 1) != " ") return std::nullopt;
  size_t start = pos + field.size() + 1, nl = text.find('\n', start);
  if (nl == std::string_view::npos) return std::nullopt;
  pos = nl + 1;
  return text.substr(start, nl - start);
}

}  // namespace

std::optional<CachedBinary> decode_cached_binary(std::string_view device, std::span<const uint8_t> bytes,
                                                 std::string* why) {
  // Exactly what encode_cached_binary writes, in its order: anything else
  // was not written by this format.
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::string magic = "tiledsl-" + std::string(device) + "-kernel 1\n";
  if (!text.starts_with(magic)) return reject(why, "not a " + std::string(device) + " kernel entry");
  size_t pos = magic.size();
  CachedBinary e;
  auto entry = header_line(text, pos, "entry");
  // The symbol the driver looks up: printable, no space or NUL to cut it.
  if (!entry || entry->empty() || entry->size() > 1024 ||
      !std::all_of(entry->begin(), entry->end(), [](char c) { return c > ' ' && c < 127; }))
    return reject(why, "a missing or damaged entry symbol");
  e.entry = *entry;
  auto threads = header_line(text, pos, "threads");
  auto count = threads ? parse_count(*threads) : std::nullopt;
  if (!count || *count < 1 || *count > 1024) return reject(why, "a missing or damaged thread count");
  e.threads = *count;
  auto shared = header_line(text, pos, "shared");
  count = shared ? parse_count(*shared) : std::nullopt;
  if (!count) return reject(why, "a missing or damaged shared-memory size");
  e.shared_bytes = *count;
  constexpr size_t kMaxMaps = 32;
  while (auto line = header_line(text, pos, "map")) {
    auto m = parse_tensor_map_line(*line);
    if (!m || e.tensor_maps.size() == kMaxMaps) return reject(why, "a damaged tensor map line");
    e.tensor_maps.push_back(*m);
  }
  if (text.substr(pos, 1) != "\n") return reject(why, "no empty line after the header lines");
  e.binary.assign(bytes.begin() + std::ptrdiff_t(pos + 1), bytes.end());
  if (e.binary.empty()) return reject(why, "an empty binary");
  return e;
}

CachedBinary get_or_compile_binary(KernelCache& cache, std::string_view device, const CacheKey& key,
                                   const std::function<CachedBinary()>& compile, bool* compiled) {
  bool ran = false;
  auto payload = cache.get_or_compile(
      key,
      [&] {
        ran = true;
        return encode_cached_binary(device, compile());
      },
      [&](std::span<const uint8_t> bytes) { return decode_cached_binary(device, bytes).has_value(); });
  if (compiled) *compiled = ran;
  std::string why;
  auto e = decode_cached_binary(device, *payload, &why);
  // Only a compile of this process can get here unchecked (disk payloads
  // were checked): its own output is a bug, not damage.
  if (!e) throw Error("internal: the " + std::string(device) + " kernel compiled for cache key " + key.hex() +
                      " is not a valid cache entry: " + why);
  return std::move(*e);
}

std::optional<CachedBinary> read_entry_bytes(std::string_view device, std::span<const uint8_t> file) {
  CacheKey key;
  if (file.size() >= kHeaderBytes) std::memcpy(key.digest.data(), file.data() + 56, 32);
  auto payload = KernelCache::decode_entry(key, file);
  if (!payload) return std::nullopt;
  return decode_cached_binary(device, *payload);
}

}  // namespace tl::runtime
