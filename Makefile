# The two commands of the README. Both install what is missing, configure
# and build; `run` then runs the gemm example on the best device present,
# `test` runs the whole suite: the ctest suite, then a consumer project
# against the installed package (`make consumer`), the fuzz targets for a
# bounded time (`make fuzz`) and the unit tests under sanitizers
# (`make sanitize`), each also a target of its own.
BUILD ?= build
JOBS ?= $(shell nproc)
# The fuzz targets need clang (libFuzzer); the sanitizer builds use the same
# compiler as $(BUILD), so they compile exactly what it compiles. Each has
# its own build directory next to $(BUILD).
FUZZ_CXX ?= clang++-22
FUZZ_SECONDS ?= 60
# The library at -O1, so the instrumented tests run fast; the tests' own
# code at -O0 (TILEDSL_TEST_COMPILE_OPTIONS), which compiles in a third of
# the time under instrumentation. -g1 gives stacks with file:line; no NDEBUG,
# so asserts run too. vptr is left out: LLVM is built without RTTI, and its
# classes' type info, which that check reads, does not exist. GCC's
# maybe-uninitialized warns falsely on std::regex under ASan.
# UBSan's checks of every pointer use (alignment, null, pointer-overflow,
# object-size) are left out too: at -O1 they tripled the library's compile
# time (lib/interp/exec_elementwise.cpp: 27 s with them, 11 s without,
# 6.6 s uninstrumented), a fifth of the CI run, and ASan reports what they
# would (an access outside an object, through its shadow memory; a null one
# as a SEGV with its stack); a misaligned access is no fault on x86-64. The
# arithmetic checks (overflow, shifts, division, conversions, array bounds,
# enums and bools) stay.
SAN_FLAGS = -O1 -g1 -fno-omit-frame-pointer -Wno-maybe-uninitialized
ASAN_FLAGS = $(SAN_FLAGS) -fsanitize=address,undefined -fno-sanitize=vptr,alignment,null,pointer-overflow,object-size \
  -fno-sanitize-recover=all
TSAN_FLAGS = $(SAN_FLAGS) -fsanitize=thread
SAN_CONFIG = -DCMAKE_BUILD_TYPE=Sanitize -DTILEDSL_TEST_COMPILE_OPTIONS=-O0
# The tags ThreadSanitizer runs: the kernel cache's tests and those that
# compile or launch from several threads at once. Only their files are
# compiled in $(BUILD)-tsan.
TSAN_TAGS ?= cache concurrency
space := $(subst ,, )
TSAN_TEST_SPEC = $(subst $(space),$(comma),$(patsubst %,[%],$(TSAN_TAGS)))
comma := ,

.PHONY: all deps configure build run test consumer fuzz sanitize asan tsan clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release > /dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/examples/gemm

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory consumer fuzz sanitize

# A project of its own using the installed package (cmake --install into
# $(BUILD)/install, then find_package), and the same programs built from the
# pkg-config files: one compiling its kernel at run time, one running it
# compiled ahead of time with the runtime library alone; each runs its
# kernel on the interpreter.
consumer: build
	@cmake --install $(BUILD) --prefix $(CURDIR)/$(BUILD)/install > /dev/null
	@cmake -S tests/consumer -B $(BUILD)/consumer -DCMAKE_PREFIX_PATH=$(CURDIR)/$(BUILD)/install > /dev/null
	@cmake --build $(BUILD)/consumer -j $(JOBS)
	$(BUILD)/consumer/consumer
	$(CXX) -o $(BUILD)/consumer/consumer-pc tests/consumer/consumer.cpp \
	  $$(PKG_CONFIG_PATH=$(CURDIR)/$(BUILD)/install/lib/pkgconfig pkg-config --cflags --libs tiledsl) \
	  -Wl,-rpath,$(CURDIR)/$(BUILD)/install/lib
	$(BUILD)/consumer/consumer-pc
	$(BUILD)/consumer/consumer_aot
	$(CXX) -o $(BUILD)/consumer/consumer_aot-pc tests/consumer/consumer_aot.cpp $(BUILD)/consumer/axpy_aot_kernels.cpp \
	  -I$(BUILD)/consumer $$(PKG_CONFIG_PATH=$(CURDIR)/$(BUILD)/install/lib/pkgconfig pkg-config --cflags --libs tiledsl-runtime) \
	  -Wl,-rpath,$(CURDIR)/$(BUILD)/install/lib
	$(BUILD)/consumer/consumer_aot-pc
	$(BUILD)/consumer/consumer_fallback
	$(CXX) -o $(BUILD)/consumer/consumer_fallback-pc tests/consumer/consumer_fallback.cpp $(BUILD)/consumer/axpy_aot_kernels.cpp \
	  -I$(BUILD)/consumer -Wl,--as-needed $$(PKG_CONFIG_PATH=$(CURDIR)/$(BUILD)/install/lib/pkgconfig pkg-config --cflags --libs tiledsl) \
	  -Wl,-rpath,$(CURDIR)/$(BUILD)/install/lib
	$(BUILD)/consumer/consumer_fallback-pc

# libFuzzer targets (fuzz/CMakeLists.txt): built against the LLVM-free part
# of the library, each run for FUZZ_SECONDS (all at once, one per core).
fuzz: deps
	@cmake -S fuzz -B $(BUILD)-fuzz -DCMAKE_CXX_COMPILER=$(FUZZ_CXX) -DFUZZ_SECONDS=$(FUZZ_SECONDS) > /dev/null
	@cmake --build $(BUILD)-fuzz -j $(JOBS)
	cd $(BUILD)-fuzz && ctest --output-on-failure -j $(JOBS)
	@cat $(BUILD)-fuzz/work/*/summary.txt

# The unit suite under AddressSanitizer + UndefinedBehaviorSanitizer (each
# TEST_CASE a ctest test: one per core, and one that dies does not take the
# rest with it), and the threaded tests under ThreadSanitizer, in build dirs
# of their own. LLVM's static archives stay uninstrumented (both sanitizers
# allow that: memory LLVM owns is not checked, our code's is).
sanitize: asan tsan

# The op sweep (2 min of code generation in the plain stage) is left out,
# and so not compiled: under instrumentation it would take most of CI's
# budget and it exercises LLVM, which is not instrumented, more than our code.
# So are half of the random kernels compiled for every target (seeds
# 100-199, 77 s of CPU here; the plain stage compiles all 200): seeds 0-99
# take our passes through the same kinds of kernels.
# use_sigaltstack=0: LLVM gives a thread that first registers its signal
# handlers (lld's first link, on an autotuner's or the AOT generator's
# worker thread) an alternate signal stack of its own; GCC 12's ASan unmaps
# whatever stack is registered when a thread exits, as if it were its own,
# and aborts (a sanitizer bug fixed in compiler-rt in 2026).
asan: deps
	@cmake -S . -B $(BUILD)-asan $(SAN_CONFIG) -DCMAKE_CXX_FLAGS_SANITIZE="$(ASAN_FLAGS)" -DTILEDSL_TEST_SKIP=op_sweep > /dev/null
	@cmake --build $(BUILD)-asan -j $(JOBS) --target tiledsl_tests
	cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:use_sigaltstack=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest -L unit -E '^op sweep|^random kernels 1[05]0-1[49]9 compile' --output-on-failure -j $(JOBS)

tsan: deps
	@cmake -S . -B $(BUILD)-tsan $(SAN_CONFIG) -DCMAKE_CXX_FLAGS_SANITIZE="$(TSAN_FLAGS)" \
	  -DTILEDSL_TEST_TAGS="$(TSAN_TAGS)" > /dev/null
	@cmake --build $(BUILD)-tsan -j $(JOBS) --target tiledsl_tests
	cd $(BUILD)-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ./tests/tiledsl_tests "$(TSAN_TEST_SPEC)"

clean:
	rm -rf $(BUILD) $(BUILD)-fuzz $(BUILD)-asan $(BUILD)-tsan
