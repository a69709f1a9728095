// Autotuning (see tiledsl/autotune.h).
#include "tiledsl/autotune.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "runtime/device.h"
#include "runtime/kernel.h"
#include "runtime/kernel_cache.h"

namespace tl {

namespace detail {

namespace {

bool print_autotuning() {
  const char* env = std::getenv("TILEDSL_PRINT_AUTOTUNING");
  return env && *env && std::string(env) != "0";
}

// The parameters of `k` its stores and atomics may write through: every
// argument their address is computed from, through loops' carried values
// (a pointer advanced each iteration) and the values regions yield.
std::vector<bool> written_params(const KernelImpl& k) {
  std::vector<bool> written(k.fn->body.args.size(), false);
  std::vector<const ir::Value*> work;
  ir::walk(k.fn->body, [&](ir::Op* o) {
    switch (o->kind) {
      case ir::OpKind::Store:
      case ir::OpKind::AtomicRmw:
      case ir::OpKind::AtomicCas:
      case ir::OpKind::DescriptorStore: work.push_back(o->operands[0]); break;
      default: break;
    }
  });
  std::unordered_set<const ir::Value*> seen;
  while (!work.empty()) {
    const ir::Value* v = work.back();
    work.pop_back();
    if (!seen.insert(v).second) continue;
    if (v->is_arg()) {
      if (v->owner == &k.fn->body) {
        written[size_t(v->index)] = true;
        continue;
      }
      // A region's argument: a loop's carried value comes from its initial
      // value and what each iteration yields; others (a combine function's)
      // from the op's operands.
      const ir::Op* op = v->owner->parent;
      if (!op) continue;
      bool carried = false;
      if (ir::is_loop(*op))
        for (size_t c = 0; c < op->results.size() && !carried; ++c)
          for (const ir::Value* a : ir::carried_args(*op, c))
            if (a == v) {
              carried = true;
              work.push_back(op->operands[ir::carried_init_index(*op) + c]);
              if (const ir::Value* y = ir::carried_yield(*op, c)) work.push_back(y);
            }
      if (!carried)
        for (const ir::Value* x : op->operands) work.push_back(x);
      continue;
    }
    for (const ir::Value* x : v->def->operands) work.push_back(x);
    // An op with regions (if, loops) gives what they yield.
    for (const auto& r : v->def->regions)
      if (const ir::Op* t = r->terminator())
        for (const ir::Value* x : t->operands) work.push_back(x);
  }
  return written;
}

// Compiles of an autotuner's configurations for one launch's arguments
// (each configuration's: Device::prepare), on up to hardware_concurrency() threads (at most 8),
// in the order they will be measured. Configurations already dropped are
// skipped.
class Compiles {
 public:
  Compiles(Device& dev, const std::vector<Kernel>& kernels, const std::vector<std::string>& dropped,
           const std::vector<size_t>& order, const std::vector<std::vector<Arg>>& args, std::source_location where)
      : errors_(kernels.size()), done_(kernels.size()) {
    std::vector<bool> skip;
    for (const auto& why : dropped) skip.push_back(!why.empty());
    for (auto& d : done_) ready_.push_back(d.get_future().share());
    unsigned n = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
    n = unsigned(std::min<size_t>(n, kernels.size()));
    for (unsigned w = 0; w < n; ++w)
      workers_.emplace_back([&dev, &kernels, &args, skip, order, where, this] {
        for (size_t i; (i = next_++) < order.size();) {
          const size_t c = order[i];
          if (!skip[c]) {
            try {
              dev.prepare(kernels[c], args[c], where);
            } catch (const std::exception& e) {
              errors_[c] = e.what();
            }
          }
          done_[c].set_value();
        }
      });
  }
  ~Compiles() {
    for (auto& t : workers_) t.join();
  }
  // Waits for configuration c's compile; its error, or "".
  std::string wait(size_t c) const {
    ready_[c].wait();
    return errors_[c];
  }

 private:
  std::vector<std::string> errors_;
  std::vector<std::promise<void>> done_;
  std::vector<std::shared_future<void>> ready_;
  std::atomic<size_t> next_{0};
  std::vector<std::thread> workers_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Ranks of `v` from 1, ties sharing their average rank.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    for (size_t t = i; t <= j; ++t) r[idx[t]] = 0.5 * double(i + j) + 1;
    i = j + 1;
  }
  return r;
}

// Spearman's rank correlation of a and b (NaN with fewer than two pairs or
// when either is constant).
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2) return NAN;
  auto ra = ranks(a), rb = ranks(b);
  double n = double(a.size()), ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += ra[i] / n, mb += rb[i] / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : NAN;
}

}  // namespace

struct AutotunerImpl {
  std::string name;
  std::vector<TuneConfig> configs;
  AutotuneOptions options;
  std::mutex mutex;
  // The thread inside pick (holding `mutex`), so that a call back into this
  // tuner from its own grid, compile, keep or cost function is an error
  // rather than a deadlock.
  std::atomic<std::thread::id> picking{};
  void refuse_reentry(const std::string& at) const {
    if (picking.load() == std::this_thread::get_id())
      throw Error(at + "autotuner '" + name + "' called from one of its own callbacks (its grid, compile, keep or " +
                  "cost function) while it picks a configuration; call the kernel or another tuner there");
  }
  std::vector<Kernel> kernels;                // compiled on first use
  std::vector<std::string> compile_errors;    // why a configuration could not compile
  std::map<std::string, size_t> winners;      // key -> configuration index
  bool disk_read = false;
  bool write_warned = false;  // a failed write of the results said once
  int64_t measured = 0;
  TuningReport last;

  std::filesystem::path results_path() const {
    auto dir = runtime::KernelCache::default_dir();
    return dir.empty() ? dir : dir / ("autotune-" + name + ".tsv");
  }

  // The key of a launch of `args` on `dev` (one line of text, no tabs);
  // key_args must name integer arguments of it.
  std::string key(const Device& dev, const std::vector<Arg>& args, const std::source_location& where) const {
    for (int i : options.key_args) {
      auto fail = [&](const std::string& expected) {
        throw Error(std::string(where.file_name()) + ":" + std::to_string(where.line()) + ": Autotuner " + name +
                    ": key_args names argument " + std::to_string(i) + ", expected " + expected);
      };
      if (i < 0 || size_t(i) >= args.size())
        fail("an index below the launch's " + std::to_string(args.size()) + " arguments");
      if (args[size_t(i)].kind != Arg::Kind::Int)
        fail(std::string("an integer argument, found ") +
             (args[size_t(i)].kind == Arg::Kind::Pointer ? "a buffer" : "a float"));
    }
    std::ostringstream k;
    k << dev.target() << ' ' << dev.hardware() << ' ' << runtime::compiler_version();
    for (size_t i = 0; i < args.size(); ++i) {
      const Arg& a = args[i];
      bool keyed = options.key_args.empty() ||
                   std::find(options.key_args.begin(), options.key_args.end(), int(i)) != options.key_args.end();
      if (a.kind == Arg::Kind::Pointer) {
        uint64_t address = a.buffer ? a.buffer->address : 0;
        k << " " << dtype_name(a.dtype) << (address % 16 == 0 ? "/16" : "/1");
      } else if (a.kind == Arg::Kind::Int && keyed) {
        k << " " << a.i;
      } else {
        k << " " << dtype_name(a.dtype);
      }
    }
    return k.str();
  }

  const Kernel* kernel(size_t c) {
    if (!kernels[c].impl() && compile_errors[c].empty()) {
      try {
        kernels[c] = configs[c].compile();
        if (!kernels[c].impl()) compile_errors[c] = "its compile function returned an empty kernel";
      } catch (const Error& e) {
        compile_errors[c] = e.what();
      } catch (const std::exception& e) {  // the user's own: the configuration is dropped all the same
        compile_errors[c] = std::string("its compile function threw: ") + e.what();
      }
    }
    return kernels[c].impl() ? &kernels[c] : nullptr;
  }

  // Winners of earlier processes (the last line of a key wins; lines of
  // configurations this tuner does not have are passed over).
  void read_results() {
    disk_read = true;
    auto path = results_path();
    if (path.empty()) return;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      auto tab = line.find('\t');
      auto tab2 = tab == std::string::npos ? tab : line.find('\t', tab + 1);
      if (tab2 == std::string::npos) continue;
      std::string k = line.substr(0, tab), config = line.substr(tab + 1, tab2 - tab - 1);
      for (size_t c = 0; c < configs.size(); ++c)
        if (configs[c].name == config) winners[k] = c;
    }
  }

  void write_result(const std::string& k, size_t c, double ms) {
    auto path = results_path();
    if (path.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    // A last line cut off (a process killed while writing) is ended first,
    // so that this record is not read as the rest of it.
    bool cut = false;
    if (std::ifstream in(path, std::ios::binary | std::ios::ate); in && in.tellg() > 0) {
      in.seekg(-1, std::ios::end);
      cut = in.get() != '\n';
    }
    // One short line appended: whole, even beside another process's.
    std::ofstream out(path, std::ios::app);
    if (cut) out << '\n';
    out << k << '\t' << configs[c].name << '\t' << ms << '\n';
    out.flush();
    if (!out && !write_warned) {
      // Once a tuner: the pick still holds in this process, but every
      // process will measure again, which a user would otherwise never learn.
      write_warned = true;
      std::fprintf(stderr,
                   "tiledsl: warning: autotune %s: cannot write its results to %s; each process will tune again "
                   "(set TILEDSL_CACHE_DIR to a writable folder)\n",
                   name.c_str(), path.string().c_str());
    }
  }

  // The arguments of a launch of configuration `c`: the launch's, then
  // the configuration's extra ones.
  std::vector<Arg> with_extra_args(const TuneConfig& c, Device& dev, const std::vector<Arg>& args) const {
    if (!c.extra_args) return args;
    std::vector<Arg> extra;
    try {
      extra = c.extra_args(dev, args);
    } catch (const std::exception& e) {
      throw Error("autotune " + name + ": TuneConfig::extra_args failed on configuration '" + c.name + "': " + e.what());
    }
    std::vector<Arg> full = args;
    full.insert(full.end(), extra.begin(), extra.end());
    return full;
  }

  size_t tune(Device& dev, const TuneGrid& grid, const std::vector<Arg>& args, const std::string& k,
              std::source_location where) {
    const bool print = print_autotuning();
    const bool interp = dev.target() == "interp";
    const int reps = interp ? 1 : std::max(1, options.reps), samples = interp ? 1 : std::max(1, options.samples);
    if (print) std::fprintf(stderr, "autotune %s: tuning %zu configurations for key '%s'\n", name.c_str(), configs.size(), k.c_str());
    TuningReport report;
    report.key = k;
    for (const auto& c : configs) report.configs.push_back({c.name});
    std::vector<std::string> reasons(configs.size());
    // Pruned before anything is traced: what `keep` refuses, then what the
    // cost model ranks past top_k; the rest in the model's order.
    auto user_call = [&](const char* what, size_t c, const auto& f) {
      try {
        return f();
      } catch (const std::exception& e) {
        throw Error("autotune " + name + ": AutotuneOptions::" + what + " failed on configuration '" +
                    configs[c].name + "': " + e.what());
      }
    };
    for (size_t c = 0; c < configs.size(); ++c)
      if (options.keep && !user_call("keep", c, [&] { return options.keep(configs[c], args); }))
        reasons[c] = "was pruned by AutotuneOptions::keep";
    std::vector<size_t> order;
    for (size_t c = 0; c < configs.size(); ++c)
      if (reasons[c].empty()) order.push_back(c);
    if (options.cost_model) {
      for (size_t c : order) {
        double e = user_call("cost_model", c, [&] { return options.cost_model(configs[c], args); });
        if (std::isnan(e))
          throw Error("autotune " + name + ": AutotuneOptions::cost_model returned NaN for configuration '" +
                      configs[c].name + "'");
        report.configs[c].estimate = e;
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return report.configs[a].estimate < report.configs[b].estimate; });
      for (size_t i = 0; options.top_k > 0 && i < order.size(); ++i)
        if (i >= size_t(options.top_k))
          reasons[order[i]] = "was ranked out by the cost model (estimate " + std::to_string(report.configs[order[i]].estimate) +
                              ", " + std::to_string(i + 1) + " of " + std::to_string(order.size()) + "; top_k " +
                              std::to_string(options.top_k) + ")";
    }
    // What any configuration may write, saved once and put back after each.
    std::vector<bool> written(args.size(), false);
    for (size_t c : order) {
      if (!reasons[c].empty()) continue;
      if (const Kernel* kern = kernel(c)) {
        auto w = written_params(*kern->impl());
        for (size_t i = 0; i < args.size() && i < w.size(); ++i) written[i] = written[i] || w[i];
      } else {
        reasons[c] = "does not compile: " + compile_errors[c];
      }
    }
    // Each configuration's arguments: the launch's, then its extra ones.
    std::vector<std::vector<Arg>> full(configs.size());
    for (size_t c : order)
      if (reasons[c].empty()) full[c] = with_extra_args(configs[c], dev, args);
    // Every configuration is compiled (and loaded) for its arguments on
    // worker threads, while the loop below measures them in order, each
    // once its compile is done.
    Compiles compiles(dev, kernels, reasons, order, full, where);
    std::vector<std::vector<char>> saved(args.size());
    for (size_t i = 0; i < args.size(); ++i)
      if (written[i] && args[i].kind == Arg::Kind::Pointer && args[i].buffer) {
        saved[i].resize(args[i].buffer->bytes());
        Buffer(args[i].buffer).copy_to_host(saved[i].data(), saved[i].size());
      }
    auto restore = [&] {
      for (size_t i = 0; i < args.size(); ++i)
        if (!saved[i].empty()) Buffer(args[i].buffer).copy_from_host(saved[i].data(), saved[i].size());
    };
    auto dropped = [&](size_t c) {
      report.configs[c].dropped = reasons[c];
      if (print) std::fprintf(stderr, "  %-24s dropped: it %s\n", configs[c].name.c_str(), reasons[c].c_str());
    };
    for (size_t c = 0; c < configs.size(); ++c)
      if (!reasons[c].empty()) dropped(c);
    size_t best = configs.size();
    double best_ms = 0;
    for (size_t c : order) {
      if (!reasons[c].empty()) continue;
      if (std::string why = compiles.wait(c); !why.empty()) {
        reasons[c] = "does not compile: " + why;
        dropped(c);
        continue;
      }
      double ms = 0;
      try {
        Grid g;
        try {
          g = grid(configs[c]);
        } catch (const std::exception& e) {  // the caller's code: any exception (a meta key it lacks: map::at)
          throw Error(std::string("its grid (the TuneGrid function) failed: ") + e.what());
        }
        std::vector<double> times;
        for (int s = 0; s < samples; ++s)
          times.push_back(dev.time_ms([&] { dev.launch(kernels[c], g, full[c], where); }, reps));
        ms = median(times);
        ++measured;
      } catch (const Error& e) {
        reasons[c] = std::string("does not launch: ") + e.what();
      }
      restore();
      if (!reasons[c].empty()) {
        dropped(c);
        continue;
      }
      report.configs[c].ms = ms;
      if (print) {
        if (options.cost_model)
          std::fprintf(stderr, "  %-24s %10.4f ms  (estimate %g)\n", configs[c].name.c_str(), ms, report.configs[c].estimate);
        else
          std::fprintf(stderr, "  %-24s %10.4f ms\n", configs[c].name.c_str(), ms);
      }
      if (best == configs.size() || ms < best_ms) {
        best = c;
        best_ms = ms;
      }
    }
    if (best == configs.size()) {
      std::string why;
      for (size_t c = 0; c < configs.size(); ++c) why += "\n  " + configs[c].name + ": it " + reasons[c];
      throw Error("autotune " + name + ": no configuration runs for key '" + k + "':" + why);
    }
    report.picked = configs[best].name;
    if (options.cost_model) {
      std::vector<double> est, ms;
      for (const auto& e : report.configs)
        if (!std::isnan(e.estimate) && !std::isnan(e.ms)) est.push_back(e.estimate), ms.push_back(e.ms);
      report.rank_correlation = spearman(est, ms);
      report.picked_model_rank = int(std::find(order.begin(), order.end(), best) - order.begin()) + 1;
    }
    if (print) {
      std::fprintf(stderr, "autotune %s: picked %s (%.4f ms)\n", name.c_str(), configs[best].name.c_str(), best_ms);
      if (options.cost_model)
        std::fprintf(stderr, "autotune %s: the cost model ranked the pick %d of %zu; rank correlation of estimates "
                     "and times %.2f\n", name.c_str(), report.picked_model_rank, order.size(), report.rank_correlation);
    }
    last = std::move(report);
    write_result(k, best, best_ms);
    return best;
  }
};

}  // namespace detail

Autotuner::Autotuner(std::string name, std::vector<TuneConfig> configs, AutotuneOptions options)
    : impl_(std::make_shared<detail::AutotunerImpl>()) {
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-';
      }))
    throw Error("Autotuner: expected a name of letters, digits, '_' and '-', found '" + name + "'");
  if (configs.empty()) throw Error("Autotuner " + name + ": expected at least one configuration, found none");
  std::set<std::string> names;
  for (const auto& c : configs) {
    if (!c.compile) throw Error("Autotuner " + name + ": configuration '" + c.name + "' has no compile function");
    if (c.name.empty() || c.name.find_first_of("\t\n") != std::string::npos || !names.insert(c.name).second)
      throw Error("Autotuner " + name + ": expected unique configuration names without tabs or newlines, found '" +
                  c.name + "'");
  }
  impl_->name = std::move(name);
  impl_->configs = std::move(configs);
  impl_->options = std::move(options);
  impl_->kernels.resize(impl_->configs.size());
  impl_->compile_errors.resize(impl_->configs.size());
}

const TuneConfig& Autotuner::pick(Device& dev, const TuneGrid& grid, const std::vector<Arg>& args,
                                  std::source_location where) {
  auto& t = *impl_;
  t.refuse_reentry(detail::where_str(where) + ": ");
  std::lock_guard lock(t.mutex);
  t.picking = std::this_thread::get_id();
  struct Done {
    std::atomic<std::thread::id>& picking;
    ~Done() { picking = std::thread::id(); }
  } done{t.picking};
  if (!t.disk_read) t.read_results();
  std::string k = t.key(dev, args, where);
  auto it = t.winners.find(k);
  if (it == t.winners.end() || !t.kernel(it->second)) it = t.winners.insert_or_assign(k, t.tune(dev, grid, args, k, where)).first;
  return t.configs[it->second];
}

void Autotuner::launch(Device& dev, const TuneGrid& grid, const std::vector<Arg>& args, std::source_location where) {
  const TuneConfig& c = pick(dev, grid, args, where);
  size_t index = size_t(&c - impl_->configs.data());
  dev.launch(impl_->kernels[index], grid(c), impl_->with_extra_args(c, dev, args), where);
}

int64_t Autotuner::measured() const {
  impl_->refuse_reentry("Autotuner::measured: ");
  std::lock_guard lock(impl_->mutex);
  return impl_->measured;
}

TuningReport Autotuner::last_tuning() const {
  impl_->refuse_reentry("Autotuner::last_tuning: ");
  std::lock_guard lock(impl_->mutex);
  return impl_->last;
}

}  // namespace tl
