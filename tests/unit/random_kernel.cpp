// Random kernels: buffers (each region's value distribution), running a
// kernel, comparing two runs store by store within error_bounds, shrinking
// a failing program, and running a check in a child process. The generator
// is random_kernel_gen_*.cpp, the tracer random_kernel_trace.cpp, the error
// model random_kernel_errors.cpp; random_kernel.h describes the approach.
#include "random_kernel.h"

#include "random_kernel_internal.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <variant>

namespace randk {

namespace {

// ---- buffers ------------------------------------------------------------------------------

template <class T>
void put(std::vector<uint8_t>& b, size_t i, T v) {
  std::memcpy(b.data() + i * sizeof(T), &v, sizeof(T));
}

double decode(DType d, const uint8_t* p) {
  auto rd = [&](auto t) {
    decltype(t) v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (d) {
    case DType::i1: return p[0];
    case DType::i8: return rd(int8_t{});
    case DType::i16: return rd(int16_t{});
    case DType::i32: return rd(int32_t{});
    case DType::i64: return double(rd(int64_t{}));
    case DType::u8: return p[0];
    case DType::u16: return rd(uint16_t{});
    case DType::u32: return rd(uint32_t{});
    case DType::u64: return double(rd(uint64_t{}));
    case DType::f8e4m3: return float(f8e4m3::from_bits(p[0]));
    case DType::f8e5m2: return float(f8e5m2::from_bits(p[0]));
    case DType::f16: return float(f16::from_bits(rd(uint16_t{})));
    case DType::bf16: return float(bf16::from_bits(rd(uint16_t{})));
    case DType::f32: return rd(float{});
    default: return rd(double{});
  }
}

Instr const_like(const Program& p, int v, int id) {
  const Val& val = p.vals[size_t(v)];
  Instr c;
  c.kind = Kind::Const;
  c.dt = val.dt;
  c.shape = val.shape;
  c.out = {v};
  c.id = id;
  if (val.wild) c.lit = 0;
  else if (isf(val.dt)) c.lit = (val.lo + val.hi) / 2;
  else c.lit = std::floor(val.lo / 2 + val.hi / 2);
  if (!isf(val.dt)) c.lit = std::clamp(c.lit, val.lo, val.hi);
  return c;
}

void edit_block(const Program& p, std::vector<Instr>& code, const std::set<int>& repl, const std::set<int>& drop) {
  std::vector<Instr> out;
  for (Instr& in : code) {
    if (in.kind == Kind::Store && drop.count(in.id)) continue;
    if (repl.count(in.id) && in.kind != Kind::Store) {
      for (int o : in.out) out.push_back(const_like(p, o, in.id));
      continue;
    }
    edit_block(p, in.body, repl, drop);
    edit_block(p, in.else_body, repl, drop);
    out.push_back(std::move(in));
  }
  code = std::move(out);
}

void ids_of(const std::vector<Instr>& code, std::vector<int>& ids, bool stores) {
  for (const Instr& in : code) {
    if ((in.kind == Kind::Store) == stores) ids.push_back(in.id);
    ids_of(in.body, ids, stores);
    ids_of(in.else_body, ids, stores);
  }
}

}  // namespace

Buffers make_buffers(const Program& p, uint64_t data_seed) {
  Buffers b;
  for (int d = 0; d < kNumDtypes; ++d) {
    DType dt = dt_of(d);
    size_t sz = size_t(byte_size(dt));
    std::vector<uint8_t> in(size_t(kRegions * kRegionElems) * sz);
    std::mt19937_64 rng(mix(data_seed, uint64_t(d)));
    for (int r = 0; r < kRegions; ++r) {
      double lo, hi;
      region_interval(dt, r, lo, hi);
      for (int64_t i = 0; i < kRegionElems; ++i) {
        size_t at = size_t(r * kRegionElems + i);
        double x01 = double(rng() >> 11) * 0x1.0p-53;
        uint64_t bits = rng();
        double v = isf(dt) ? (r == 2 ? std::floor(lo + x01 * (hi - lo + 1)) : lo + x01 * (hi - lo))
                           : std::floor(lo + x01 * (hi - lo + 1));
        v = std::min(v, hi);
        switch (dt) {
          case DType::i1: put<uint8_t>(in, at, r == 2 ? 1 : uint8_t(bits & 1)); break;
          case DType::i8: put<int8_t>(in, at, r == 1 ? int8_t(bits) : int8_t(v)); break;
          case DType::i16: put<int16_t>(in, at, r == 1 ? int16_t(bits) : int16_t(v)); break;
          case DType::i32: put<int32_t>(in, at, r == 1 ? int32_t(bits) : int32_t(v)); break;
          case DType::i64: put<int64_t>(in, at, r == 1 ? int64_t(bits) : int64_t(v)); break;
          case DType::u8: put<uint8_t>(in, at, r == 1 ? uint8_t(bits) : uint8_t(v)); break;
          case DType::u16: put<uint16_t>(in, at, r == 1 ? uint16_t(bits) : uint16_t(v)); break;
          case DType::u32: put<uint32_t>(in, at, r == 1 ? uint32_t(bits) : uint32_t(v)); break;
          case DType::u64: put<uint64_t>(in, at, r == 1 ? uint64_t(bits) : uint64_t(v)); break;
          case DType::f8e4m3: put<uint8_t>(in, at, f8e4m3(float(v)).bits); break;
          case DType::f8e5m2: put<uint8_t>(in, at, f8e5m2(float(v)).bits); break;
          case DType::f16: put<uint16_t>(in, at, f16(float(v)).bits); break;
          case DType::bf16: put<uint16_t>(in, at, bf16(float(v)).bits); break;
          case DType::f32: put<float>(in, at, float(v)); break;
          case DType::f64: put<double>(in, at, v); break;
        }
      }
    }
    b.in.push_back(std::move(in));
    b.out.emplace_back(size_t(std::max<int64_t>(1, p.out_elems[size_t(d)])) * sz, uint8_t(0x7b));
  }
  return b;
}

std::vector<std::vector<uint8_t>> run(tl::Device& dev, const tl::Kernel& k, const Program& p, const Buffers& b) {
  std::vector<tl::Buffer> ins, outs;
  std::vector<tl::Arg> args;
  for (int d = 0; d < kNumDtypes; ++d) {
    DType dt = dt_of(d);
    tl::Buffer x = dev.alloc(dt, b.in[size_t(d)].size() / size_t(byte_size(dt)));
    x.copy_from_host(b.in[size_t(d)].data(), b.in[size_t(d)].size());
    ins.push_back(x);
  }
  for (int d = 0; d < kNumDtypes; ++d) {
    DType dt = dt_of(d);
    tl::Buffer x = dev.alloc(dt, b.out[size_t(d)].size() / size_t(byte_size(dt)));
    x.copy_from_host(b.out[size_t(d)].data(), b.out[size_t(d)].size());
    outs.push_back(x);
  }
  for (auto& x : ins) args.emplace_back(x);
  for (auto& x : outs) args.emplace_back(x);
  args.emplace_back(p.n);
  args.emplace_back(p.m);
  args.emplace_back(p.trips);
  dev.launch(k, tl::Grid{p.grid}, args);
  dev.synchronize();
  std::vector<std::vector<uint8_t>> r;
  for (int d = 0; d < kNumDtypes; ++d) {
    std::vector<uint8_t> host(b.out[size_t(d)].size());
    outs[size_t(d)].copy_to_host(host.data(), host.size());
    r.push_back(std::move(host));
  }
  return r;
}

std::string compare(const Program& p, const std::vector<std::vector<uint8_t>>& want,
                    const std::vector<std::vector<uint8_t>>& got) {
  std::vector<const Instr*> stores;
  walk_stores(p.code, stores);
  std::vector<double> bounds = error_bounds(p);
  std::ostringstream o;
  int shown = 0, bad = 0;
  for (size_t s = 0; s < stores.size(); ++s) {
    const Instr& st = *stores[s];
    const Val& v = p.vals[size_t(st.args[0])];
    size_t sz = size_t(byte_size(v.dt)), d = size_t(idx(v.dt));
    int64_t count = v.numel() * p.grid;
    for (int64_t i = 0; i < count; ++i) {
      size_t at = size_t(st.slot + i) * sz;
      const uint8_t *w = want[d].data() + at, *g = got[d].data() + at;
      bool ok;
      double wv = decode(v.dt, w), gv = decode(v.dt, g);
      if (!isf(v.dt)) ok = std::memcmp(w, g, sz) == 0;
      else if (std::isnan(wv) || std::isnan(gv)) ok = std::isnan(wv) && std::isnan(gv);
      else ok = wv == gv || std::fabs(wv - gv) <= bounds[s];  // == for infinities (bitcast bits)
      if (ok) continue;
      ++bad;
      if (shown++ < 6) {
        o << "store #" << st.id << " (" << vname(st.args[0]) << ": " << dtype_name(v.dt) << shape_str(v.shape)
          << ") element " << i << ": interp " << std::setprecision(17) << wv << ", gpu " << gv << ", |diff| "
          << std::fabs(wv - gv) << " > bound " << bounds[s] << "\n";
      }
    }
  }
  if (bad) o << bad << " elements differ\n";
  return o.str();
}

Program edit(const Program& p, const std::vector<int>& replaced, const std::vector<int>& drop_stores) {
  Program q = p;
  std::set<int> repl(replaced.begin(), replaced.end()), drop(drop_stores.begin(), drop_stores.end());
  edit_block(q, q.code, repl, drop);
  return q;
}

Shrunk shrink(uint64_t seed, int budget, const GenOptions& opts, const std::function<bool(const Program&)>& fails) {
  Shrunk s;
  // 1. The smallest budget that still fails (prefixes of one kernel).
  int lo = budget;
  for (int b = 1; b < budget; ++b) {
    ++s.attempts;
    if (fails(generate(seed, b, opts))) { lo = b; break; }
  }
  s.budget = lo;
  Program base = generate(seed, lo, opts);
  // 2. Ops replaced by constants, last first; then stores dropped.
  std::vector<int> ops, stores, repl, drop;
  ids_of(base.code, ops, false);
  ids_of(base.code, stores, true);
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    auto trial = repl;
    trial.push_back(*it);
    ++s.attempts;
    if (fails(edit(base, trial, drop))) repl = trial;
  }
  for (int st : stores) {
    auto trial = drop;
    trial.push_back(st);
    if (trial.size() == stores.size()) break;
    ++s.attempts;
    if (fails(edit(base, repl, trial))) drop = trial;
  }
  s.replaced = repl;
  s.program = edit(base, repl, drop);
  return s;
}

std::string in_child(const std::function<std::string()>& fn, int timeout_s) {
  int fds[2];
  if (pipe(fds) != 0) return fn();
  // The child's stderr goes to a file: what LLVM prints before exit(1).
  char err_path[] = "/tmp/tiledsl-rk-stderr-XXXXXX";
  int err_fd = mkstemp(err_path);
  // The child's temporary files (ptxas inputs) go to a folder of its own,
  // removed after it, however it ended.
  char tmp_dir[] = "/tmp/tiledsl-child-XXXXXX";
  bool have_tmp = mkdtemp(tmp_dir) != nullptr;
  std::fflush(nullptr);  // nothing buffered may be written twice
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    if (have_tmp) std::filesystem::remove_all(tmp_dir);
    return fn();
  }
  if (pid == 0) {
    // A process group of its own: a timeout kills what it started too
    // (a ptxas it is waiting for).
    setpgid(0, 0);
    if (have_tmp) setenv("TMPDIR", tmp_dir, 1);
    close(fds[0]);
    if (err_fd >= 0) dup2(err_fd, 2);
    std::string msg;
    try {
      msg = fn();
    } catch (const std::exception& e) {
      msg = std::string("exception: ") + e.what();
    } catch (...) {
      msg = "unknown exception";
    }
    size_t off = 0;
    while (off < msg.size()) {
      ssize_t w = write(fds[1], msg.data() + off, msg.size() - off);
      if (w <= 0) break;
      off += size_t(w);
    }
    close(fds[1]);
    _exit(msg.empty() ? 0 : 1);
  }
  close(fds[1]);
  setpgid(pid, pid);  // as the child does, whichever runs first
  std::string msg;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  for (;;) {
    int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0) { timed_out = true; break; }
    pollfd pf{fds[0], POLLIN, 0};
    int r = poll(&pf, 1, left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) { timed_out = true; break; }
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    msg.append(buf, size_t(n));
  }
  close(fds[0]);
  int status = 0;
  if (timed_out) kill(-pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  kill(-pid, SIGKILL);  // what it left running (nothing, normally)
  if (have_tmp) {
    std::error_code ec;
    std::filesystem::remove_all(tmp_dir, ec);
  }
  std::string err;
  if (err_fd >= 0) {
    char buf[4096];
    ssize_t n = pread(err_fd, buf, sizeof buf, 0);
    if (n > 0) err.assign(buf, size_t(n));
    close(err_fd);
    unlink(err_path);
  }
  std::string tail = err.empty() ? "" : "; its stderr: " + err;
  if (timed_out) return "timeout after " + std::to_string(timeout_s) + " s" + tail;
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")" +
           (msg.empty() ? "" : ": " + msg) + tail + "\n";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return msg.empty() ? "exit status " + std::to_string(WEXITSTATUS(status)) + tail + "\n" : msg;
}

}  // namespace randk
