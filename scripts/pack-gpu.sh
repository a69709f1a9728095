#!/usr/bin/env bash
# Builds what the GPU machine runs and packs it into dist/tiledsl-gpu.tar.xz
# (that machine has no LLVM and no compiler toolchain of ours): libtiledsl
# (LLVM linked in), Google Benchmark's shared library, the test binary, the
# examples and the benchmarks. scripts/gpu-run.sh unpacks and runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$BUILD" -j "$(nproc)"
stage=$(mktemp -d)
mkdir -p "$stage/lib" "$stage/bin"
cp -a "$BUILD"/libtiledsl.so* "$BUILD"/libtiledsl_runtime.so* "$stage/lib/"  # the versioned files and their links
cp /usr/lib/x86_64-linux-gnu/libbenchmark.so.1debian "$stage/lib/" 2>/dev/null || true
cp "$BUILD/tests/tiledsl_tests" "$stage/bin/"
cp "$BUILD"/examples/* "$stage/bin/"
cp "$BUILD"/bench/bench_* "$stage/bin/" 2>/dev/null || true
rm -f "$stage/bin/bench_compile_scaling"  # the compiler's own speed: measured here, not there
find "$stage/lib" "$stage/bin" -type f -exec strip --strip-unneeded {} + 2>/dev/null || true  # files, not links
mkdir -p dist
XZ_OPT=${XZ_OPT:--T0} tar -C "$stage" -cJf dist/tiledsl-gpu.tar.xz lib bin  # xz on every core
rm -rf "$stage"
ls -la dist/tiledsl-gpu.tar.xz
