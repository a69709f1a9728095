// decode: attention of one new token per sequence against a KV cache
// (flash-decoding), O = softmax(q K^T * sm_scale) V with q, O of shape [B,
// H, D] and K, V of shape [B, KV, L, D] (grouped-query: H / KV query heads
// share a key/value head), checked against a double-precision reference.
//
//   decode                              B=8 H=32 KV=8 L=32768 D=128 bf16
//   decode --shape=B,H,KV,L --d=64|128  another cache
//   decode --small                      the CI size (interpreter)
//
// One token has too little work per head to fill a GPU, so the cache is
// split along L: decode_split runs a program per (split, batch x key/value
// head) over its chunk of keys for the head's G query heads at once (the
// rows of one product: every key is read once for the group), leaving an
// unnormalized partial output and its running max and sum per split;
// decode_combine then merges the splits of each query head. On a GPU the
// split kernel's step, warps, pipeline depth and number of splits are
// tuned for the shape by tl::Autotuner (winners kept beside the kernel
// cache; TILEDSL_PRINT_AUTOTUNING=1 prints the candidates). The work is
// the reading of K and V: the example reports GB/s of cache read against a
// copy of the same bytes timed in the same run.
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "common.h"
#include "kernels/attention.h"

namespace {

// Program (split, kv): query heads kv * group .. + group (rows of G, the
// first `group` real), keys [split * chunk, min(+chunk, L)) of key/value
// head kv (b * KV + kv head), chunk the cache's length over the splits
// (the grid's first dimension) rounded up to BN. Writes acc [G, D] (unnormalized) to
// o_part[head, split] and the rows' running max (log2 units) and sum to
// m_part, l_part; a split with no keys writes -inf, 0 and 0.
template <class T, int G, int BN, int D>
void decode_split(tl::ptr<T> Q, tl::ptr<T> K, tl::ptr<T> V, tl::ptr<float> o_part, tl::ptr<float> m_part,
                  tl::ptr<float> l_part, tl::scalar<int32_t> cache_len, tl::scalar<int32_t> group,
                  tl::scalar<float> sm_scale) {
  auto split = tl::program_id(0);                               // scalar i32: chunk of keys
  auto kv = tl::program_id(1);                                  // scalar i32: batch * KV + key/value head
  auto splits = tl::num_programs(0);                            // scalar i32
  auto chunk = ((cache_len + splits - 1) / splits + BN - 1) / BN * BN;  // scalar i32
  auto rows = tl::arange(0, G);                                 // [G] i32: query heads of the group
  auto row_ok = rows < group;                                   // [G] i1
  auto heads = kv * group + rows;                               // [G] i32: batch * H + head
  auto d = tl::arange(0, D);                                    // [D] i32
  auto q = tl::load(Q + tl::col(heads) * D + tl::row(d), tl::col(row_ok));  // [G, D] T
  auto qk_scale = sm_scale * 1.44269504f;                       // scalar f32: log2(e) folded in
  auto kv_base = kv * cache_len * D;                            // scalar i32: this head's [L, D]

  auto m_i = tl::full<float>({G}, -INFINITY);                   // [G] f32 running max (log2 units)
  auto l_i = tl::zeros<float>({G});                             // [G] f32 running sum of p
  auto acc = tl::zeros<float>({G, D});                          // [G, D] f32 unnormalized output
  auto lo = split * chunk;                                      // scalar i32
  auto hi = tl::minimum(lo + chunk, cache_len);                 // scalar i32
  for (auto start_n : tl::range(lo, hi, BN)) {
    auto cols = start_n + tl::arange(0, BN);                    // [BN] i32: key indices
    auto col_ok = tl::col(cols < hi);                           // [BN, 1] i1
    auto offs = kv_base + tl::col(cols) * D + tl::row(d);       // [BN, D] i32
    auto k = tl::load(K + offs, col_ok);                        // [BN, D] T
    auto v = tl::load(V + offs, col_ok);                        // [BN, D] T
    // Keys past hi (the chunk's or the cache's end) masked: seq_len = hi (start_m is
    // read by the causal form only).
    kernels::attend_block<T, false, G, BN, false>(q, k, v, rows, split, start_n, hi, qk_scale, m_i, l_i, acc);
  }
  auto part = tl::col(heads) * splits + split;                  // [G, 1] i32: (head, split)
  tl::store(o_part + part * D + tl::row(d), acc, tl::col(row_ok));
  tl::store(m_part + heads * splits + split, m_i, row_ok);
  tl::store(l_part + heads * splits + split, l_i, row_ok);
}

// Program head (batch * H + head): the splits' partial outputs weighted by
// exp2(m_s - max m) over the same-weighted sums of p.
template <class T, int S, int D>
void decode_combine(tl::ptr<float> o_part, tl::ptr<float> m_part, tl::ptr<float> l_part, tl::ptr<T> O,
                    tl::scalar<int32_t> splits) {
  auto head = tl::program_id(0);                                // scalar i32
  auto s = tl::arange(0, S);                                    // [S] i32: splits (the first `splits` real)
  auto s_ok = s < splits;                                       // [S] i1
  auto d = tl::arange(0, D);                                    // [D] i32
  auto m = tl::load(m_part + head * splits + s, s_ok, -INFINITY);  // [S] f32
  auto l = tl::load(l_part + head * splits + s, s_ok, 0.0f);    // [S] f32
  auto m_max = tl::max(tl::row(m), 1);                          // [1] f32 (finite: split 0 has keys)
  auto w = tl::exp2(tl::row(m) - tl::col(m_max));              // [1, S] f32: 0 for empty splits
  auto o = tl::load(o_part + (head * splits + tl::col(s)) * D + tl::row(d), tl::col(s_ok), 0.0f);  // [S, D] f32
  auto num = tl::sum(o * tl::reshape(w, {S, 1}), 0);            // [D] f32
  auto den = tl::sum(tl::row(l) * w, 1);                        // [1] f32
  tl::store(O + head * D + d, tl::cast<T>(num / den));
}

// out[i] = in[i] over n elements: the copy rate the cache read is held to.
template <int BLOCK>
void copy_kernel(tl::ptr<tl::bf16> in, tl::ptr<tl::bf16> out, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto ok = offs < n;                                            // [BLOCK] i1
  tl::store(out + offs, tl::load(in + offs, ok), ok);
}

struct Case {
  int B, H, KV, L, D;
  int group() const { return H / KV; }
};

// The attention of each query head in double; o[(b * H + h) * D + d].
std::vector<double> reference(const Case& c, float sm_scale, const std::vector<double>& q,
                              const std::vector<double>& k, const std::vector<double>& v) {
  const int D = c.D, L = c.L;
  std::vector<double> out(size_t(c.B) * c.H * D), p(L);
  for (int bh = 0; bh < c.B * c.H; ++bh) {
    size_t kv = size_t(bh / c.group()) * L * D;  // (b * KV + h / group)'s [L, D]
    double mx = -INFINITY, total = 0;
    for (int j = 0; j < L; ++j) {
      double s = 0;
      for (int d = 0; d < D; ++d) s += q[size_t(bh) * D + d] * k[kv + size_t(j) * D + d];
      mx = std::max(mx, p[j] = s * sm_scale);
    }
    for (int j = 0; j < L; ++j) total += (p[j] = std::exp(p[j] - mx));
    for (int d = 0; d < D; ++d) {
      double o = 0;
      for (int j = 0; j < L; ++j) o += p[j] * v[kv + size_t(j) * D + d];
      out[size_t(bh) * D + d] = o / total;
    }
  }
  return out;
}

// The split kernel's configurations a GPU run tunes over (tl::Autotuner,
// winners kept beside the kernel cache): BN keys a step, warps, pipeline
// stages, and programs a multiprocessor (how many splits the cache gets:
// "SPLITS" a batch x key/value head, at most kMaxSplits, for a device of
// `processors` multiprocessors). The first is the one the interpreter and
// --emit run.
constexpr int kMaxSplits = 64;

template <class T, int G, int D>
std::vector<tl::TuneConfig> split_configs(int heads, int processors) {
  std::vector<tl::TuneConfig> configs;
  auto add = [&]<int BN>(int warps, int stages, int per_sm) {
    int splits = std::clamp(int(tl::cdiv(per_sm * processors, heads)), 1, kMaxSplits);
    configs.push_back({std::to_string(BN) + ":" + std::to_string(warps) + ":" + std::to_string(stages) + "x" +
                           std::to_string(per_sm),
                       [=] {
                         return tl::compile(decode_split<T, G, BN, D>,
                                            {.name = "decode_split", .num_warps = warps, .num_stages = stages});
                       },
                       {{"SPLITS", splits}}});
  };
  add.template operator()<64>(4, 4, 4);
  add.template operator()<64>(4, 3, 2);
  add.template operator()<64>(4, 3, 4);
  add.template operator()<64>(4, 3, 8);
  add.template operator()<32>(4, 4, 4);
  add.template operator()<32>(4, 4, 8);
  add.template operator()<128>(4, 2, 4);
  add.template operator()<64>(8, 3, 4);
  return configs;
}

template <int D>
int run(examples::Setup& s, const Case& c) {
  constexpr int G = 16, S = kMaxSplits;  // query rows a program (group <= 16), splits at most
  using T = tl::bf16;
  if (c.group() > G || c.H % c.KV)
    throw tl::Error("decode: expected KV dividing H with at most " + std::to_string(G) +
                    " query heads a key/value head, found H=" + std::to_string(c.H) + " KV=" + std::to_string(c.KV));
  if (int64_t(c.B) * c.KV * c.L * D >= int64_t(1) << 31)
    throw tl::Error("decode: the cache has 2^31 or more elements a tensor; the kernel's offsets are 32-bit");
  // The configurations' splits depend on the number of heads: a tuner
  // (and a results file) per count, each key's winner kept on disk.
  const int heads = c.B * c.KV;
  const auto configs = split_configs<T, G, D>(heads, s.dev.processor_count());
  tl::Autotuner tuner("decode_split_d" + std::to_string(D) + "_h" + std::to_string(heads), configs);
  const bool tune = !s.on_interp && !examples::inspecting;
  tl::Kernel split_k = tune ? tl::Kernel{} : configs.front().compile();
  tl::Kernel combine_k = tl::compile(decode_combine<T, S, D>, {.name = "decode_combine", .num_warps = 4});

  size_t nq = size_t(c.B) * c.H * D, nkv = size_t(c.B) * c.KV * c.L * D;
  auto hq = examples::random_vector<T>(nq, 21), hk = examples::random_vector<T>(nkv, 22),
       hv = examples::random_vector<T>(nkv, 23);
  tl::Buffer q = s.dev.upload(hq), k = s.dev.upload(hk), v = s.dev.upload(hv), o = s.dev.alloc<T>(nq);
  size_t parts = size_t(c.B) * c.H * S;  // room for any configuration's splits
  tl::Buffer o_part = s.dev.alloc<float>(parts * D), m_part = s.dev.alloc<float>(parts),
             l_part = s.dev.alloc<float>(parts);
  const float sm_scale = 1.0f / std::sqrt(float(D));
  auto grid = [&](const tl::TuneConfig& cfg) { return tl::Grid{uint32_t(cfg.meta.at("SPLITS")), uint32_t(heads)}; };
  // On a GPU the first launch tunes the split kernel for this shape (or
  // reads its winner); the combine reads as many splits as the pick made.
  const tl::TuneConfig& pick =
      tune ? tuner.pick(s.dev, grid, {q, k, v, o_part, m_part, l_part, c.L, c.group(), sm_scale}) : configs.front();
  const int splits = int(pick.meta.at("SPLITS"));
  std::printf("decode: B=%d H=%d KV=%d L=%d D=%d bf16, %d splits (split kernel BN:warps:stages x programs a "
              "multiprocessor: %s%s) on %s\n",
              c.B, c.H, c.KV, c.L, D, splits, pick.name.c_str(), tune ? ", tuned" : "", s.dev.name().c_str());
  double ms = examples::time_ms(s, [&] {
    if (tune) tuner(s.dev, grid, q, k, v, o_part, m_part, l_part, c.L, c.group(), sm_scale);
    else s.dev(split_k, grid(pick), q, k, v, o_part, m_part, l_part, c.L, c.group(), sm_scale);
    s.dev(combine_k, tl::Grid{uint32_t(c.B * c.H)}, o_part, m_part, l_part, o, splits);
  });
  if (examples::inspecting) return 0;

  // The copy of the cache's bytes (K and V: 2 * nkv elements) in the same run.
  double copy_ms = 0;
  if (!s.on_interp) {
    constexpr int BLOCK = 2048;
    tl::Kernel copy = tl::compile(copy_kernel<BLOCK>, {.name = "copy", .num_warps = 8});
    tl::Buffer dst = s.dev.alloc<T>(nkv);
    copy_ms = examples::time_ms(s, [&] {
      s.dev(copy, tl::Grid{uint32_t(tl::cdiv(int64_t(nkv), BLOCK))}, k, dst, int(nkv));
      s.dev(copy, tl::Grid{uint32_t(tl::cdiv(int64_t(nkv), BLOCK))}, v, dst, int(nkv));
    });
  }

  auto ref = reference(c, sm_scale, examples::to_double(hq), examples::to_double(hk), examples::to_double(hv));
  auto got = o.download<T>();
  examples::Check check;
  check.count = ref.size();
  for (size_t i = 0; i < ref.size(); ++i) {
    double g = double(float(got[i])), err = std::fabs(g - ref[i]);
    // A weighted mean of V in [-1, 1]: 1e-2 absolute (bf16's P and output
    // rounding stay far below it); NaN never passes.
    if (!(err <= 1e-2) && check.mismatches++ == 0) {
      check.first_bad = i;
      check.first_got = g;
      check.first_ref = ref[i];
    }
    check.max_abs_error = std::isnan(err) ? INFINITY : std::max(check.max_abs_error, err);
  }
  double bytes = 2.0 * double(nkv) * sizeof(T);
  // A copy moves its bytes twice (read and written): its bandwidth is 2 x
  // bytes / time, the rate the cache's read is held to.
  if (copy_ms > 0)
    std::printf("cache read %.0f GB/s; copy bandwidth %.0f GB/s (read + write); %.2f of it\n",
                bytes / (ms * 1e-3) / 1e9, 2 * bytes / (copy_ms * 1e-3) / 1e9, copy_ms / ms / 2);
  return examples::report(check, {.ms = ms, .bytes = bytes});
}

Case parse_shape(const std::string& text) {
  Case c{};
  char extra;
  if (std::sscanf(text.c_str(), "%d,%d,%d,%d%c", &c.B, &c.H, &c.KV, &c.L, &extra) != 4 || c.B < 1 || c.H < 1 ||
      c.KV < 1 || c.L < 1 || c.H % c.KV)
    throw tl::Error("--shape: expected B,H,KV,L (positive integers, KV dividing H; e.g. 8,32,8,32768), found '" +
                    text + "'");
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::run_main([&] {
    std::string shape = examples::take_option(argc, argv, "--shape");
    std::string head_dim = examples::take_option(argc, argv, "--d", "128");
    auto s = examples::parse_args(argc, argv, "flash-decoding: one token against a KV cache");
    if (head_dim != "64" && head_dim != "128") throw tl::Error("--d: expected 64 or 128, found '" + head_dim + "'");
    Case c = !shape.empty() ? parse_shape(shape)
             : s.small      ? Case{1, 4, 2, 300, 0}
             : s.on_interp  ? Case{2, 8, 2, 1000, 0}
                            : Case{8, 32, 8, 32768, 0};
    c.D = std::stoi(head_dim);
    return c.D == 64 ? run<64>(s, c) : run<128>(s, c);
  });
}
