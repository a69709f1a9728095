// The runtime API on the interp device: device selection, buffers and their
// checked copies, kernel accessors, and launch argument checking with the
// exact messages users see.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <sstream>

#include "kernel_builder.h"
#include "runtime/device.h"
#include "tiledsl/runtime.h"

using namespace kb;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// out[i] = x[i] + y[i] for i < n, BLOCK elements per program.
tl::Kernel vector_add(int64_t block = 256) {
  KernelBuilder kb("vector_add", {P(DType::f32), P(DType::f32), P(DType::f32), S(DType::i32)});
  kb.at(3);
  Value* pid = kb.op(OpKind::ProgramId, {}, S(DType::i32), {{"axis", int64_t(0)}});
  Value* start = kb.op(OpKind::Mul, {pid, kb.ci(S(DType::i32), block)}, S(DType::i32));
  Value* offs = kb.op(OpKind::Add, {kb.splat(start, {block}), kb.arange(block)}, T(DType::i32, {block}));
  Value* mask = kb.cmp("lt", offs, kb.splat(kb.arg(3), {block}));
  Value* a = kb.load(kb.ptrs(kb.arg(0), offs), mask);
  Value* b = kb.load(kb.ptrs(kb.arg(1), offs), mask);
  kb.store(kb.ptrs(kb.arg(2), offs), kb.op(OpKind::Add, {a, b}, a->type), mask);
  return kb.kernel();
}

// "<this file>:<line>: ", the prefix of an error naming a launch at `line`.
std::string at(int line) { return std::string(__FILE__) + ":" + std::to_string(line) + ": "; }

// RAII setting of an environment variable.
struct EnvVar {
  std::string name;
  std::optional<std::string> saved;
  EnvVar(const char* n, const char* value) : name(n) {
    if (const char* old = std::getenv(n)) saved = old;
    if (value) setenv(n, value, 1);
    else unsetenv(n);
  }
  ~EnvVar() {
    if (saved) setenv(name.c_str(), saved->c_str(), 1);
    else unsetenv(name.c_str());
  }
};

}  // namespace

TEST_CASE("runtime: devices by name, by environment, and the best available", "[runtime]") {
  CHECK(tl::Device::get("interp").name() == "interp");
  auto names = tl::Device::available();
  CHECK(std::find(names.begin(), names.end(), "interp") != names.end());
  CHECK(tl::Device::get("interp").impl() == tl::Device::get("interp").impl());  // one device per name
  {
    EnvVar env("TILEDSL_DEVICE", "interp");
    CHECK(tl::Device::get().name() == "interp");
  }
  {
    EnvVar env("TILEDSL_DEVICE", nullptr);
    CHECK(tl::Device::get().name() == names.front());
  }
  {
    EnvVar env("TILEDSL_DEVICE", "tpu");
    REQUIRE_THROWS_WITH(tl::Device::get(),
                        StartsWith("TILEDSL_DEVICE=tpu: unknown device 'tpu' (available: ") && Contains("interp"));
  }
  REQUIRE_THROWS_WITH(tl::Device::get("nope"), StartsWith("unknown device 'nope' (available: ") && Contains("interp"));
  REQUIRE_THROWS_WITH(tl::Device().name(), "empty tl::Device: get one with tl::Device::get()");
  // One program at a time on the interpreter; a GPU reports its SMs.
  CHECK(tl::Device::get("interp").processor_count() == 1);
  CHECK(tl::Device::inspector("sm_90a", "asm").processor_count() == 1);
  if (std::find(names.begin(), names.end(), "cuda") != names.end())
    CHECK(tl::Device::get("cuda").processor_count() >= 1);
}

// A device that fails to start says why at every Device::get, not only the
// first (the registry kept an empty entry: later calls returned an empty
// tl::Device). Registered for this test alone: available only inside it.
TEST_CASE("runtime: a device that fails to start fails every time, saying why", "[runtime]") {
  static bool inside = false;
  static int starts = 0;
  tl::detail::register_device({"failing", [] { return inside; }, [](int) -> std::shared_ptr<tl::detail::DeviceImpl> {
                                 ++starts;
                                 throw tl::Error("cuDevicePrimaryCtxRetain failed: CUDA_ERROR_DEVICE_UNAVAILABLE (46)");
                               }});
  inside = true;
  for (int attempt = 0; attempt < 3; ++attempt) {
    INFO("attempt " << attempt);
    REQUIRE_THROWS_WITH(tl::Device::get("failing"), Contains("CUDA_ERROR_DEVICE_UNAVAILABLE"));
    REQUIRE_THROWS_WITH(tl::Device::get("failing:0"), Contains("CUDA_ERROR_DEVICE_UNAVAILABLE"));
  }
  CHECK(starts == 6);
  inside = false;
}

TEST_CASE("runtime: buffers copy with type and size checks", "[runtime]") {
  auto dev = tl::Device::get("interp");
  auto b = dev.alloc<float>(10);
  CHECK(b.dtype() == DType::f32);
  CHECK(b.size() == 10);
  CHECK(b.bytes() == 40);
  std::vector<float> host{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  b.upload(host);
  CHECK(b.download<float>() == host);
  auto h = dev.upload(std::vector<tl::bf16>{tl::bf16(1.5f), tl::bf16(2.0f)});
  CHECK(h.dtype() == DType::bf16);
  CHECK(float(h.download<tl::bf16>()[0]) == 1.5f);
  // The caller's line, the operation, expected and found.
  const std::string here = std::string(__FILE__) + ":";
  REQUIRE_THROWS_WITH(h.download<float>(), Catch::StartsWith(here) &&
                                               Catch::EndsWith(": Buffer::download<f32>: expected a host vector of the "
                                                               "buffer's element type, bf16, found one of f32"));
  REQUIRE_THROWS_WITH(h.upload(std::vector<float>{1, 2}),
                      Catch::StartsWith(here) &&
                          Catch::EndsWith(": Buffer::upload<f32>: expected a host vector of the buffer's element type, "
                                          "bf16, found one of f32"));
  REQUIRE_THROWS_WITH(b.upload(std::vector<float>(5)),
                      Catch::EndsWith(": Buffer::upload<f32>: expected a host vector of the buffer's 10 elements, found 5"));
  REQUIRE_THROWS_WITH(tl::Buffer().download<float>(), Catch::EndsWith(": Buffer::download<f32>: empty tl::Buffer: "
                                                                      "allocate one with Device::alloc or Device::upload"));
  // A size near 2^64 bytes, on every device (the inspector's rounding up
  // once wrapped it around to a block of 256 bytes, which copies overran).
  for (tl::Device d : {dev, tl::Device::inspector("sm_90a", "asm")}) {
    INFO(d.name());
    REQUIRE_THROWS_WITH(d.alloc<uint8_t>(SIZE_MAX), Catch::Contains("cannot allocate 18446744073709551615 bytes"));
    REQUIRE_THROWS_WITH(d.alloc<uint8_t>(SIZE_MAX - 200), Catch::Contains("cannot allocate 18446744073709551415 bytes"));
  }
  std::vector<char> big(41);
  REQUIRE_THROWS_WITH(b.copy_from_host(big.data(), 41),
                      "Buffer::copy_from_host: copy of 41 bytes into a buffer of 40 bytes (10 x f32)");
  REQUIRE_THROWS_WITH(b.copy_to_host(big.data(), 41),
                      "Buffer::copy_to_host: copy of 41 bytes out of a buffer of 40 bytes (10 x f32)");
  REQUIRE_THROWS_WITH(b.copy_from_host(nullptr, 16), "Buffer::copy_from_host: copy of 16 bytes into a buffer of 40 "
                                                     "bytes (10 x f32): expected a host pointer, found null");
  REQUIRE_THROWS_WITH(b.copy_to_host(nullptr, 4), "Buffer::copy_to_host: copy of 4 bytes out of a buffer of 40 "
                                                  "bytes (10 x f32): expected a host pointer, found null");
  b.copy_from_host(nullptr, 0);  // nothing to copy
  REQUIRE_THROWS_WITH(dev.alloc<float>(size_t(1) << 62),
                      "Device::alloc of 4611686018427387904 x f32: the count times 4 bytes does not fit in size_t");
  REQUIRE_THROWS_WITH(dev.alloc(DType(99), 4), "Device::alloc of 4 x ?: expected an element type, found DType 99");
  b.copy_to_host(big.data(), 8);  // a prefix is fine
  float first;
  std::memcpy(&first, big.data(), 4);
  CHECK(first == 1.0f);
  auto empty = dev.alloc<int32_t>(0);
  CHECK(empty.bytes() == 0);
  CHECK(empty.download<int32_t>().empty());
  REQUIRE_THROWS_WITH(tl::Buffer().size(), "empty tl::Buffer: allocate one with Device::alloc or Device::upload");
}

TEST_CASE("runtime: kernel accessors", "[runtime]") {
  auto k = vector_add();
  CHECK(k.name() == "vector_add");
  CHECK(k.options().name == "vector_add");
  REQUIRE(k.params().size() == 4);
  CHECK(k.params()[0].str() == "ptr<f32>");
  CHECK(k.params()[3].str() == "i32");
  CHECK_THAT(k.ir(), Contains("func @vector_add(") && Contains("load") && Contains("store"));
  REQUIRE_THROWS_WITH(tl::Kernel().name(), "empty tl::Kernel: create one with tl::compile");
}

TEST_CASE("runtime: vector_add runs over an odd size", "[runtime]") {
  auto dev = tl::Device::get("interp");
  const int n = 1000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[size_t(i)] = float(i) * 0.5f;
    y[size_t(i)] = float(n - i);
  }
  auto bx = dev.upload(x), by = dev.upload(y);
  auto bo = dev.alloc<float>(n);
  dev(vector_add(), tl::Grid{(n + 255) / 256}, bx, by, bo, n);
  dev.synchronize();
  auto o = bo.download<float>();
  for (int i = 0; i < n; ++i) CHECK(o[size_t(i)] == x[size_t(i)] + y[size_t(i)]);
  // A zero grid dimension launches nothing (Triton-like), after checking arguments.
  bo.upload(std::vector<float>(n, -1.0f));
  dev(vector_add(), tl::Grid{0}, bx, by, bo, n);
  CHECK(bo.download<float>() == std::vector<float>(n, -1.0f));
  REQUIRE_THROWS(dev(vector_add(), tl::Grid{0}, bx, by, bo));
}

TEST_CASE("runtime: launch arguments are checked against the signature", "[runtime]") {
  // Each error names the launching line, like trace-time errors do.
  auto dev = tl::Device::get("interp");
  auto k = vector_add();
  auto f = dev.alloc<float>(4);
  auto h = dev.alloc<tl::bf16>(4);
  int line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, f, f, f),
                      at(line) + "kernel 'vector_add' expects 4 arguments (ptr<f32>, ptr<f32>, ptr<f32>, i32), found 3");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, f, f, f, 4, 5),
                      at(line) + "kernel 'vector_add' expects 4 arguments (ptr<f32>, ptr<f32>, ptr<f32>, i32), found 5");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, f, h, f, 4),
                      at(line) + "argument 2 of 'vector_add': expected ptr<f32>, found buffer of bf16");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, 3, f, f, 4), at(line) + "argument 1 of 'vector_add': expected ptr<f32>, found i32 value 3");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, f, f, f, 2.5), at(line) + "argument 4 of 'vector_add': expected i32, found f64 value 2.5");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, f, f, f, f), at(line) + "argument 4 of 'vector_add': expected i32, found buffer of f32");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, f, f, f, int64_t(1) << 40),
                      at(line) + "argument 4 of 'vector_add': expected i32, found i64 value 1099511627776, which does not fit in i32");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, f, f, f, ~uint64_t(0)),
                      at(line) + "argument 4 of 'vector_add': expected i32, found u64 value 18446744073709551615, which does not fit in i32");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, f, tl::Buffer(), f, 4),
                      at(line) + "argument 2 of 'vector_add': expected ptr<f32>, found an empty tl::Buffer");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, f, f, f, tl::Buffer()),
                      at(line) + "argument 4 of 'vector_add': expected i32, found an empty tl::Buffer");
  // The vector form names its caller too, and an empty kernel or device.
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev.launch(k, {1}, {f, f}),
                      at(line) + "kernel 'vector_add' expects 4 arguments (ptr<f32>, ptr<f32>, ptr<f32>, i32), found 2");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(tl::Kernel(), {1}, f), at(line) + "empty tl::Kernel: create one with tl::compile");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(tl::Device()(k, {1}, f), at(line) + "empty tl::Device: get one with tl::Device::get()");
  // Integers of other types whose value fits are accepted.
  dev(k, {1}, f, f, f, size_t(4));
  dev(k, {1}, f, f, f, int64_t(-1));
  dev(k, {1}, f, f, f, uint8_t(4));
}

TEST_CASE("runtime: every device takes grids within CUDA's limits, the interpreter too", "[runtime][limits]") {
  // out[program_id(1)] = program_id(1) + program_id(2): the largest y runs
  // (once program ids past 2^31 - 1 wrapped on the interpreter).
  KernelBuilder kb("ids", {P(DType::i32)});
  Value* y = kb.op(OpKind::ProgramId, {}, S(DType::i32), {{"axis", int64_t(1)}});
  Value* z = kb.op(OpKind::ProgramId, {}, S(DType::i32), {{"axis", int64_t(2)}});
  kb.store(kb.ptrs(kb.arg(0), y), kb.op(OpKind::Add, {y, z}, S(DType::i32)));
  auto k = kb.kernel();
  auto dev = tl::Device::get("interp");
  auto out = dev.alloc<int32_t>(65535);
  dev(k, {1, tl::Grid::max_y, 1}, out);
  auto o = out.download<int32_t>();
  CHECK(o[0] == 0);
  CHECK(o[65534] == 65534);
  STATIC_REQUIRE(tl::Grid::max_x == 2147483647u);
  STATIC_REQUIRE(tl::Grid::max_y == 65535u);
  STATIC_REQUIRE(tl::Grid::max_z == 65535u);
  auto insp = tl::Device::inspector("sm_90a", "tile");
  auto ibuf = insp.alloc<int32_t>(4);
  for (auto* d : {&dev, &insp}) {
    auto& b = d == &dev ? out : ibuf;
    int line = __LINE__ + 1;
    REQUIRE_THROWS_WITH((*d)(k, {2147483648u}, b),
                        at(line) + "launch of kernel 'ids': grid.x must be at most 2147483647 (CUDA's limit, which "
                                   "every device applies), found 2147483648");
    line = __LINE__ + 1;
    REQUIRE_THROWS_WITH((*d)(k, {1, 65536, 1}, b),
                        at(line) + "launch of kernel 'ids': grid.y must be at most 65535 (CUDA's limit, which every "
                                   "device applies), found 65536");
    line = __LINE__ + 1;
    REQUIRE_THROWS_WITH((*d)(k, {0, 1, 65536}, b),  // even with no programs
                        at(line) + "launch of kernel 'ids': grid.z must be at most 65535 (CUDA's limit, which every "
                                   "device applies), found 65536");
  }
  // A buffer of another inspector of the same target: not "on 'inspect:sm_90a', but the launch is on
  // 'inspect:sm_90a'".
  auto other = tl::Device::inspector("sm_90a", "tile");
  int line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(other(k, {1}, ibuf),
                      at(line) + "argument 1 of 'ids': expected ptr<i32>, found buffer of i32 on device "
                                 "'inspect:sm_90a', but the launch is on another device of that name (each "
                                 "tl::Device::inspector call makes a device of its own)");
}

TEST_CASE("runtime: num_warps beyond a target's 1024 threads fails at its GPU compile", "[runtime][limits]") {
  // tl::compile allows 32 warps (1024 threads of 32 lanes); the 64-lane AMD
  // CDNA targets take 16 at most. The inspector compiles as a GPU launch does.
  KernelBuilder kb("wide", {P(DType::f32)});
  kb.store(kb.ptrs(kb.arg(0), kb.arange(128)), kb.cf(T(DType::f32, {128}), 1.0));
  kb.impl()->options.num_warps = 32;
  auto k = kb.kernel();
  std::ostringstream sink;
  auto* old = std::cout.rdbuf(sink.rdbuf());  // the inspector prints the assembly
  for (const char* target : {"gfx90a", "gfx942"}) {
    auto insp = tl::Device::inspector(target, "asm");
    CHECK_THROWS_WITH(insp(k, {1}, insp.alloc<float>(128)),
                      "kernel 'wide': num_warps must be at most 16 on " + std::string(target) +
                          " (1024 threads of 64 lanes), found 32");
  }
  for (const char* target : {"sm_90a", "gfx1100"}) {
    auto insp = tl::Device::inspector(target, "asm");
    CHECK_NOTHROW(insp(k, {1}, insp.alloc<float>(128)));
  }
  std::cout.rdbuf(old);
}

TEST_CASE("runtime: scalar parameters of every kind", "[runtime]") {
  // out[0] = float(i) + x; out[1] = float(u); out[2] = float(b)
  KernelBuilder kb("scalars", {P(DType::f32), S(DType::i8), S(DType::f32), S(DType::u32), S(DType::i1), S(DType::bf16)});
  Value* i = kb.op(OpKind::Cast, {kb.arg(1)}, S(DType::f32));
  kb.store(kb.arg(0), kb.op(OpKind::Add, {i, kb.arg(2)}, S(DType::f32)));
  kb.store(kb.ptrs(kb.arg(0), kb.ci(S(DType::i32), 1)), kb.op(OpKind::Cast, {kb.arg(3)}, S(DType::f32)));
  kb.store(kb.ptrs(kb.arg(0), kb.ci(S(DType::i32), 2)), kb.op(OpKind::Cast, {kb.arg(4)}, S(DType::f32)));
  kb.store(kb.ptrs(kb.arg(0), kb.ci(S(DType::i32), 3)), kb.op(OpKind::Cast, {kb.arg(5)}, S(DType::f32)));
  auto k = kb.kernel();
  auto dev = tl::Device::get("interp");
  auto out = dev.alloc<float>(4);
  dev(k, {1}, out, -128, 0.1, 4000000000u, true, 1.00390625);
  auto o = out.download<float>();
  CHECK(o[0] == -128.0f + 0.1f);  // the f64 argument is rounded to the f32 parameter
  CHECK(o[1] == 4000000000.0f);
  CHECK(o[2] == 1.0f);
  CHECK(o[3] == 1.0f);  // rounded to bf16 (a tie, to even)
  dev(k, {1}, out, 5, 3, 7, false, 2);  // ints are accepted for float parameters
  CHECK(out.download<float>() == std::vector<float>{8.0f, 7.0f, 0.0f, 2.0f});
  // Narrow floats as host values, for a parameter of their type or another.
  dev(k, {1}, out, 1, tl::f16(0.5f), 7, false, tl::bf16(1.5f));
  CHECK(out.download<float>() == std::vector<float>{1.5f, 7.0f, 0.0f, 1.5f});
  dev(k, {1}, out, 1, tl::bf16(0.25f), 7, false, tl::f16(1.00390625f));
  CHECK(out.download<float>()[3] == 1.0f);  // the f16 value rounded to the bf16 parameter
  // C++ integers of every spelling: long long, unsigned long long, char.
  dev(k, {1}, out, char(-3), 1LL, 9ULL, false, 2LL);
  CHECK(out.download<float>() == std::vector<float>{-2.0f, 9.0f, 0.0f, 2.0f});
  int line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, out, 128, 0.1, 1, true, 1.0),
                      at(line) + "argument 2 of 'scalars': expected i8, found i32 value 128, which does not fit in i8");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, out, tl::f16(1.0f), 0.1, 1, true, 1.0),
                      at(line) + "argument 2 of 'scalars': expected i8, found f16 value 1");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, out, 1, 0.1, -1, true, 1.0),
                      at(line) + "argument 4 of 'scalars': expected u32, found i32 value -1, which does not fit in u32");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, out, 1, 0.1, 1, 2, 1.0),
                      at(line) + "argument 5 of 'scalars': expected i1, found i32 value 2, which does not fit in i1");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, out, 1, out, 1, true, 1.0),
                      at(line) + "argument 3 of 'scalars': expected f32, found buffer of f32");
  // A finite float beyond the parameter's range is not made an infinity
  // unasked; an infinity passes as one.
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, out, 1, 1e300, 1, true, 1.0),
                      at(line) + "argument 3 of 'scalars': expected f32, found f64 value 1e+300, which does not fit in "
                                 "f32 (it is beyond the type's largest finite value)");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev(k, {1}, out, 1, 0.5, 1, true, 1e39),
                      at(line) + "argument 6 of 'scalars': expected bf16, found f64 value 1e+39, which does not fit in "
                                 "bf16 (it is beyond the type's largest finite value)");
  dev(k, {1}, out, 1, -std::numeric_limits<double>::infinity(), 1, true, 1.0);
  CHECK(out.download<float>()[0] == -std::numeric_limits<float>::infinity());
}
