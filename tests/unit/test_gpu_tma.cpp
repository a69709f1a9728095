// Tensor copies (TMA) and their mbarriers, lowered from GPU IR written as
// the Hopper passes will write it (ops.def: mbarrier_*, tma_load,
// tma_store): they assemble for sm_90a, are a clear error elsewhere, and
// on the H200 copy boxes of a tensor exactly, through tensor maps passed
// by value as the launcher will pass them: the map's swizzle stores a
// box as the buffer's layout says (a local_load reads it back in place),
// out-of-range elements read as zero and are not written. Tensor maps'
// rules are checked before the driver sees them.
#include <catch2/catch.hpp>

#include <regex>

#include "codegen/compile.h"
#include "codegen/swizzled_tile.h"
#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "ir/parser.h"
#include "nvptx/cuda_driver.h"
#include "nvptx/cuda_tensor_map.h"
#include "tiledsl/tiledsl.h"

using namespace tl;
using Catch::Matchers::Contains;
using codegen::SwizzledTile;
using nvptx::TensorMapSpec;

namespace {

// A buffer layout in GPU IR text: {offset: [(r,c), ...] -> dim0:R dim1:C}.
std::string offsets_text(const SwizzledTile& t) {
  std::string s = "{offset: [";
  auto bases = t.layout().bases(ir::kOffset);
  for (size_t i = 0; i < bases.size(); ++i)
    s += (i ? ", (" : "(") + std::to_string(bases[i][0]) + "," + std::to_string(bases[i][1]) + ")";
  return s + "] -> dim0:" + std::to_string(t.shape[0]) + " dim1:" + std::to_string(t.shape[1]) + "}";
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// The ops that fill %buf (a rows x cols buffer in the swizzled layout) with
// the box at (%m, %k) of the M x K tensor at %src (rows %ld elements
// apart): its tensor map, the mbarrier's initialization, a barrier, one
// arrival expecting the box's bytes, the copy, the wait.
const std::string kFill = R"(  %one = constant {value = 1} : i32
  %smap = tensor_map %src, %M, %K, %ld, %one {box = [BOXR, BOXC], swizzle = SWZ} : ptr<DT>
  %bar = local_alloc {offset = 0} : smem<1xi64, #lbar>
  %buf = local_alloc {offset = 1024} : smem<ROWSxCOLSxDT, #lbuf>
  %zero = constant {value = 0} : i32
  mbarrier_init %bar {count = 1}
  barrier
  mbarrier_expect_tx %bar {bytes = BYTES}
  tma_load %smap, %buf, %bar, %m, %k
  mbarrier_wait %bar, %zero
)";

std::string fill_in(std::string text, const SwizzledTile& t, const std::string& dtype) {
  auto box = codegen::tensor_box_of(t);
  text = replace_all(text, "BOXR", std::to_string(box.rows));
  text = replace_all(text, "BOXC", std::to_string(box.inner));
  text = replace_all(text, "SWZ", std::to_string(box.swizzle_bytes));
  text = replace_all(text, "ROWS", std::to_string(t.shape[0]));
  text = replace_all(text, "COLS", std::to_string(t.shape[1]));
  text = replace_all(text, "BYTES", std::to_string(t.bytes()));
  text = replace_all(text, "DT", dtype);
  return "#lbar = {offset: [] -> dim0:1}\n#lbuf = " + offsets_text(t) + "\n" + text;
}

// A box of `src` at (m, k) copied to the same box of `dst` (of the same
// shape and strides) by tensor copies.
std::string copy_kernel(const SwizzledTile& t, const std::string& dtype) {
  return fill_in("func @tma_copy(%src: ptr<DT>, %dst: ptr<DT>, %M: i32, %K: i32, %ld: i32, %m: i32, %k: i32) "
                 "attributes {barriers = \"inserted\", num_ctas = 1, num_warps = 4, warp_size = 32} {\n" +
                     kFill +
                     "  %dmap = tensor_map %dst, %M, %K, %ld, %one {box = [BOXR, BOXC], swizzle = SWZ} : ptr<DT>\n"
                     "  tma_store %dmap, %buf, %m, %k\n}\n",
                 t, dtype);
}

codegen::Specialization facts(const ir::Function& fn) {
  codegen::Specialization s;
  for (const auto& a : fn.body.args)
    s.args.push_back(a->type.is_ptr ? codegen::pointer_arg_facts(256) : codegen::int_arg_facts(1));
  return s;
}

codegen::CompiledKernel compile_text(const std::string& text, const std::string& target) {
  auto module = ir::parse(text, "tma.tir");
  REQUIRE(module->functions.size() == 1);
  return codegen::compile_gpu_ir(*module->functions[0], facts(*module->functions[0]), target);
}
std::string lower(const std::string& text, const std::string& target) { return compile_text(text, target).assembly; }

// A rows x cols tile of bf16: 128-byte rows (the 128-byte swizzle), 64,
// 32, 16 (none), and rows of 512 bytes (four panels, a copy each).
const std::vector<std::pair<int64_t, int64_t>> kTiles = {{128, 64}, {64, 32}, {32, 16}, {16, 8}, {64, 256}};

}  // namespace

TEST_CASE("tensor copies and mbarriers lower for sm_90a and assemble", "[codegen]") {
  for (auto [rows, cols] : kTiles) {
    INFO(rows << " x " << cols);
    SwizzledTile t = SwizzledTile::plan(rows, cols, 1, 2);
    codegen::CompiledKernel ck = compile_text(copy_kernel(t, "bf16"), "sm_90a");
    const std::string& ptx = ck.assembly;
    auto box = codegen::tensor_box_of(t);
    REQUIRE(box.why.empty());
    // Two maps after the seven arguments, 128 bytes by value each, read in
    // place (no local copy), described for the launcher.
    CHECK(codegen_checks::count(ptx, R"(\.param \.align 64 \.b8 tma_copy_param_[78]\[128\])") == 2);
    CHECK(codegen_checks::count(ptx, R"(ld\.local|st\.local|\.local)") == 0);
    REQUIRE(ck.tensor_maps.size() == 2);
    for (int i = 0; i < 2; ++i) {
      const codegen::TensorMapParam& m = ck.tensor_maps[size_t(i)];
      CHECK(m.dtype == DType::bf16);
      CHECK(m.base_arg == i);
      REQUIRE(m.sizes.size() == 2);
      using Operand = codegen::TensorMapParam::Operand;
      CHECK((m.sizes[0] == Operand::argument(2) && m.sizes[1] == Operand::argument(3) &&
             m.strides[0] == Operand::argument(4)));
      CHECK(m.strides[1] == Operand::constant(1));
      CHECK(m.box == std::vector<int64_t>{box.rows, box.inner});
      CHECK(m.swizzle_bytes == box.swizzle_bytes);
    }
    CHECK(codegen_checks::count(ptx, R"(cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier::complete_tx::bytes)") ==
          box.panels);
    CHECK(codegen_checks::count(ptx, R"(cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group)") == box.panels);
    CHECK(codegen_checks::count(ptx, R"(mbarrier\.try_wait\.parity)") == 1);
    // Shared memory starts on the swizzle's atom: 8 rows of its width.
    int atom = std::max(128, 8 * box.swizzle_bytes);
    CHECK(codegen_checks::count(ptx, R"(\.extern \.shared \.align )" + std::to_string(atom) + " ") == 1);
    codegen_checks::check_assembles(ptx, "sm_90a");
  }
}

TEST_CASE("tensor copies are a clear error where they cannot be lowered", "[codegen]") {
  SwizzledTile t = SwizzledTile::plan(128, 64, 1, 2);
  std::string text = copy_kernel(t, "bf16");
  CHECK_THROWS_WITH(lower(text, "sm_80"),
                    Contains("'tensor_map' needs tensor copies (TMA) and transaction mbarriers, which sm_80 "
                             "does not have (sm_90 or later)"));
  CHECK_THROWS_WITH(lower(replace_all(text, "warp_size = 32", "warp_size = 64"), "gfx942"),
                    Contains("'tensor_map' needs tensor copies (TMA)"));
  // A buffer off its swizzle's 1024-byte atom.
  CHECK_THROWS_WITH(lower(replace_all(text, "offset = 1024", "offset = 512"), "sm_90a"),
                    Contains("'tma_load' expects its buffer (and each slot) at a multiple of 1024 bytes of shared "
                             "memory (its swizzle's atom), found offset 512"));
  // A map of a tensor the kernel computes: the launcher cannot encode it.
  std::string computed = replace_all(text, "%ld, %one {", "%ld, %two {");
  computed = replace_all(computed, "  %smap =", "  %two = add %one, %one : i32\n  %smap =");
  CHECK_THROWS_WITH(lower(computed, "sm_90a"),
                    Contains("'tensor_map' expects each size and stride to be a kernel argument, a constant or a product of "
                             "them (the launcher encodes the map), found operand #4 computed otherwise"));
  CHECK_THROWS_WITH(lower(replace_all(text, "%smap = tensor_map %src, %M, %K, %ld, %one",
                                      "%sp = addptr %src, %M : ptr<bf16>\n  %smap = tensor_map %sp, %M, %K, %ld, %one"),
                          "sm_90a"),
                    Contains("'tensor_map' expects its base to be a kernel argument"));
  // Rows of 8 bytes: no tensor copy moves them.
  SwizzledTile narrow = SwizzledTile::plan(16, 4, 1, 2);
  CHECK_THROWS_WITH(lower(copy_kernel(narrow, "bf16"), "sm_90a"),
                    Contains("'tma_load' expects a buffer a tensor copy can fill, found rows of 8 bytes"));
}

TEST_CASE("tensor maps keep TMA's rules, said before the driver is asked", "[codegen]") {
  TensorMapSpec ok{DType::bf16, 256, {200, 100}, {104, 1}, {128, 64}, 128};
  CHECK(nvptx::tensor_map_problem(ok).empty());
  auto with = [&](auto f) {
    TensorMapSpec s = ok;
    f(s);
    return nvptx::tensor_map_problem(s);
  };
  CHECK(with([](TensorMapSpec& s) { s.address = 8; }) == "expected a base address aligned to 16 bytes, found 8");
  CHECK(with([](TensorMapSpec& s) { s.strides = {100, 1}; }) ==
        "expected strides of a multiple of 16 bytes (8 elements), found [100, 1]");
  CHECK(with([](TensorMapSpec& s) { s.strides = {1, 104}; }) ==
        "expected a contiguous last dimension (stride 1), found strides [1, 104]");
  CHECK(with([](TensorMapSpec& s) { s.box = {512, 64}; }) == "expected box sizes of 1 to 256, found [512, 64]");
  CHECK(with([](TensorMapSpec& s) { s.box = {128, 4}; }) ==
        "expected a box 8 elements (16 bytes) wide or a multiple, found [128, 4]");
  CHECK(with([](TensorMapSpec& s) { s.swizzle_bytes = 64; }) ==
        "expected a box at most as wide as its 64-byte swizzle, found 128 bytes");
  CHECK(with([](TensorMapSpec& s) { s.shape = {1, 2, 3, 4, 5, 6}; }) ==
        "expected a tensor of rank 1 to 5, found rank 6");
  CHECK(with([](TensorMapSpec& s) { s.dtype = DType::i1; }) == "expected an element type a tensor map holds, found i1");
  // A tensor with no elements (a gemm's K = 0): a map of ones at the zeros,
  // same box and swizzle, which the rules allow.
  TensorMapSpec none = ok;
  none.shape = {200, 0};
  CHECK(with([](TensorMapSpec& s) { s.shape = {200, 0}; }) == "expected sizes of 1 to 2^32, found [200, 0]");
  CHECK(nvptx::has_no_elements(none));
  CHECK_FALSE(nvptx::has_no_elements(ok));
  TensorMapSpec empty = nvptx::empty_tensor_spec(none, 4096);
  CHECK(nvptx::tensor_map_problem(empty).empty());
  CHECK(empty.address == 4096);
  CHECK(empty.shape == std::vector<int64_t>{1, 1});
  CHECK(empty.box == ok.box);
  CHECK(empty.swizzle_bytes == ok.swizzle_bytes);
}

namespace {

// A launch of one program of 128 threads of a kernel compiled from GPU IR:
// its arguments (device addresses and i32s, as int64 values), then its
// tensor maps by value, encoded from those values as the launcher will.
struct Launch {
  const nvptx::CudaDriver& d = nvptx::CudaDriver::get();
  codegen::CompiledKernel ck;
  nvptx::CUmodule module = nullptr;
  nvptx::CUfunction fn = nullptr;

  explicit Launch(codegen::CompiledKernel compiled) : ck(std::move(compiled)) {
    nvptx::JitLog log;
    d.check(d.cuModuleLoadDataEx(&module, ck.assembly.c_str(), nvptx::JitLog::count, log.options, log.values),
            "cuModuleLoadDataEx", log.text());
    d.check(d.cuModuleGetFunction(&fn, module, ck.entry.c_str()), "cuModuleGetFunction");
  }
  void operator()(const std::vector<int64_t>& args) {
    REQUIRE(args.size() == ck.params.size());
    std::vector<uint64_t> wide(args.size());
    std::vector<int32_t> narrow(args.size());
    std::vector<void*> params;
    for (size_t i = 0; i < args.size(); ++i) {
      wide[i] = uint64_t(args[i]), narrow[i] = int32_t(args[i]);
      params.push_back(ck.params[i].is_ptr ? static_cast<void*>(&wide[i]) : static_cast<void*>(&narrow[i]));
    }
    std::vector<nvptx::TensorMap> maps;
    for (const auto& m : ck.tensor_maps) maps.push_back(nvptx::encode_tensor_map(d, nvptx::tensor_map_spec(m, args)));
    for (auto& m : maps) params.push_back(&m);
    d.check(d.cuLaunchKernel(fn, 1, 1, 1, unsigned(ck.threads), 1, 1, unsigned(ck.shared_bytes), nullptr,
                             params.data(), nullptr),
            "cuLaunchKernel");
    d.check(d.cuCtxSynchronize(), "cuCtxSynchronize");
  }
};

// The source tensor: a ragged M x K (rows and columns that no box
// divides), a padded row stride, distinct values.
constexpr int64_t M = 200, K = 300, stride = 304;
std::vector<bf16> ragged_source() {
  std::vector<bf16> src(size_t(M * stride));
  for (size_t i = 0; i < src.size(); ++i) src[i] = bf16(float(int(i % 1999) - 999));
  return src;
}

// Whether GPU 0 runs sm_90a; says [SKIP] when not.
bool hopper() {
  const auto& d = nvptx::CudaDriver::get();
  nvptx::CUdevice dev = 0;
  int major = 0, minor = 0;
  d.check(d.cuDeviceGet(&dev, 0), "cuDeviceGet");
  d.check(d.cuDeviceGetAttribute(&major, nvptx::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute");
  d.check(d.cuDeviceGetAttribute(&minor, nvptx::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute");
  if (major == 9 && minor == 0) return true;
  WARN("[SKIP] tensor copies need sm_90a, this GPU has compute capability " << major << "." << minor);
  return false;
}

int64_t address(const Buffer& b) { return int64_t(b.device_address()); }

}  // namespace

TEST_CASE("tensor copies move boxes of a tensor, zeros out of range, clipped stores", "[gpu]") {
  REQUIRE_GPU();
  Device dev = Device::get("cuda");
  if (!hopper()) return;
  const std::vector<bf16> src = ragged_source();
  const bf16 sentinel = bf16(-7.0f);
  for (auto [rows, cols] : kTiles) {
    SwizzledTile t = SwizzledTile::plan(rows, cols, 1, 2);
    Launch copy(compile_text(copy_kernel(t, "bf16"), "sm_90a"));
    // Inside, across the last row and column, and wholly outside (the
    // innermost coordinate a multiple of 16 bytes, none negative, rows of
    // a multiple of 16 bytes: what tensor stores take, ops.def).
    const int64_t Ks = K / 8 * 8;
    int64_t k_edge = (Ks - cols / 2) / 8 * 8;
    for (auto [m0, k0] : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {M - rows / 2, k_edge}, {M + 8, 0}, {0, Ks + 8}}) {
      INFO(rows << " x " << cols << " box at (" << m0 << ", " << k0 << ")");
      auto s = dev.upload(src);
      auto d = dev.upload(std::vector<bf16>(src.size(), sentinel));
      copy({address(s), address(d), M, Ks, stride, m0, k0});
      auto got = d.download<bf16>();
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < stride; ++j) {
          bool in_box = i >= m0 && i < m0 + rows && j >= k0 && j < k0 + cols && j < Ks;
          size_t at = size_t(i * stride + j);
          INFO("element (" << i << ", " << j << ")");
          REQUIRE(float(got[at]) == float(in_box ? src[at] : sentinel));
        }
    }
  }
}

TEST_CASE("a tensor copy stores its box in the buffer's swizzled layout", "[gpu]") {
  REQUIRE_GPU();
  Device dev = Device::get("cuda");
  if (!hopper()) return;
  // A traced copy of a rows x cols tile to a dense output; its load then
  // becomes the box's tensor copy and a local_load of the buffer.
  const std::vector<bf16> src = ragged_source();
  auto check = [&](const Kernel& k, const SwizzledTile& t, int64_t m0, int64_t k0) {
    int64_t rows = t.shape[0], cols = t.shape[1];
    INFO(rows << " x " << cols << " box at (" << m0 << ", " << k0 << ")");
    std::string gpu = codegen::emit_stage(*k.impl(), codegen_checks::aligned(k), "sm_90a", codegen::Stage::Gpu);
    std::smatch m;
    REQUIRE(std::regex_search(gpu, m, std::regex(R"(\n  (%\d+) = load %\d+ : (tile<[^>]*>)[^\n]*)")));
    // The kernel's arguments: x, y, M, K, ld, m, k.
    std::string fill = kFill;
    for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
             {"%src", "%0"}, {"%M,", "%2,"}, {"%K,", "%3,"}, {"%ld,", "%4,"}, {"%m,", "%5,"}, {"%k\n", "%6\n"}})
      fill = replace_all(fill, from, to);
    std::string text = gpu.substr(0, size_t(m.position(0))) + "\n" + fill + "  " + m[1].str() + " = local_load %buf : " +
                       m[2].str() + gpu.substr(size_t(m.position(0) + m.length(0)));
    Launch run(compile_text(fill_in(text, t, "bf16"), "sm_90a"));
    auto s = dev.upload(src);
    auto out = dev.upload(std::vector<bf16>(size_t(rows * cols), bf16(-7.0f)));
    run({address(s), address(out), M, K, stride, m0, k0});
    auto got = out.download<bf16>();
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        int64_t r = m0 + i, c = k0 + j;
        float want = r >= 0 && r < M && c >= 0 && c < K ? float(src[size_t(r * stride + c)]) : 0.0f;
        INFO("element (" << i << ", " << j << ")");
        REQUIRE(float(got[size_t(i * cols + j)]) == want);
      }
  };
  auto kernel = [](auto rows_c, auto cols_c) {
    constexpr int R = decltype(rows_c)::value, C = decltype(cols_c)::value;
    return compile(
        [](ptr<bf16> x, ptr<bf16> y, scalar<int32_t> M, scalar<int32_t> K, scalar<int32_t> ld, scalar<int32_t> m,
           scalar<int32_t> k) {
          auto r = arange(0, R), c = arange(0, C);
          auto offs = col(r) * C + row(c);  // [R, C] i32
          store(y + offs, load(x + offs));
        },
        {.name = "tile_copy", .num_warps = 4});
  };
  using std::integral_constant;
  Kernel k128 = kernel(integral_constant<int, 128>{}, integral_constant<int, 64>{});
  Kernel k64 = kernel(integral_constant<int, 64>{}, integral_constant<int, 32>{});
  Kernel k32 = kernel(integral_constant<int, 32>{}, integral_constant<int, 16>{});
  Kernel kwide = kernel(integral_constant<int, 64>{}, integral_constant<int, 256>{});
  // Inside, across the last row and column, before the first ones.
  check(k128, SwizzledTile::plan(128, 64, 1, 2), 8, 16);
  check(k128, SwizzledTile::plan(128, 64, 1, 2), M - 64, K - 36);
  check(k128, SwizzledTile::plan(128, 64, 1, 2), -8, -16);
  check(k64, SwizzledTile::plan(64, 32, 1, 2), 3, 40);
  check(k32, SwizzledTile::plan(32, 16, 1, 2), 190, 296);
  check(kwide, SwizzledTile::plan(64, 256, 1, 2), 150, 96);
  check(kwide, SwizzledTile::plan(64, 256, 1, 2), -8, -64);
}

