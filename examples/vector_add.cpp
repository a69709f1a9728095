// vector_add: out = x + y over n floats, one program per BLOCK elements.
// The smallest complete tiledsl program: a kernel, a compile, buffers, a
// launch and a check. A bandwidth kernel: it reports GB/s.
#include "common.h"

// Each program adds one BLOCK-long slice; the mask turns off the lanes past
// n in the last, partial slice.
template <int BLOCK>
void vector_add(tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::scalar<int32_t> n) {
  auto pid = tl::program_id(0);                       // scalar i32
  auto offs = pid * BLOCK + tl::arange(0, BLOCK);     // [BLOCK] i32
  auto mask = offs < n;                               // [BLOCK] i1
  auto a = tl::load(x + offs, mask);                  // [BLOCK] f32
  auto b = tl::load(y + offs, mask);                  // [BLOCK] f32
  tl::store(out + offs, a + b, mask);
}

int main(int argc, char** argv) {
  return examples::run_main([&] {
    auto s = examples::parse_args(argc, argv, "adds two float vectors");
    // Not a multiple of BLOCK, so the last program is partly masked.
    const int n = s.small ? 98'437 : s.on_interp ? 10'000'019 : 1 << 26;
    constexpr int BLOCK = 1024;

    tl::Kernel k;
    double compile_ms = examples::wall_ms([&] { k = tl::compile(vector_add<BLOCK>, {.name = "vector_add"}); });
    std::printf("vector_add: n=%d BLOCK=%d on %s (tl::compile %.1f ms)\n", n, BLOCK, s.dev.name().c_str(),
                compile_ms);

    auto hx = examples::random_vector<float>(n, 1);
    auto hy = examples::random_vector<float>(n, 2);
    tl::Buffer x = s.dev.upload(hx), y = s.dev.upload(hy);
    tl::Buffer out = s.dev.alloc<float>(n);

    tl::Grid grid{uint32_t(tl::cdiv(n, BLOCK))};
    double ms = examples::time_ms(s, [&] { s.dev(k, grid, x, y, out, n); });

    // A float add is exact to one rounding: the reference rounds the same way.
    std::vector<double> ref(n);
    for (int i = 0; i < n; ++i) ref[i] = double(hx[i] + hy[i]);
    auto check = examples::compare(out.download<float>(), ref, 0.0, 0.0);
    return examples::report(check, {.ms = ms, .bytes = 3.0 * n * sizeof(float)});
  });
}
