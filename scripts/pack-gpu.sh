#!/usr/bin/env bash
# Builds what the GPU machine runs and packs it into dist/tiledsl-gpu.tar.xz
# (that machine has no LLVM and no compiler toolchain of ours): libtiledsl
# (LLVM linked in), Google Benchmark's shared library, the test binary, the
# examples and the benchmarks. scripts/gpu-run.sh unpacks and runs them.
#
# LIB_ONLY=1 packs the two libraries alone (about 15 MB beside the whole
# package's 50, so that both fit in one call's carry): a before/after of a
# compiler change, whose programs are the same, built for example from
# another revision in a worktree:
#   git worktree add /tmp/base <rev>
#   LIB_ONLY=1 PACK=$PWD/dist/base-lib.tar.xz bash /tmp/base/scripts/pack-gpu.sh
# scripts/gpu-compare.sh runs such a package with the programs of the first
# package it is given. PACK names the output (default dist/tiledsl-gpu.tar.xz).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PACK=${PACK:-dist/tiledsl-gpu.tar.xz}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release > /dev/null
if [ "${LIB_ONLY:-0}" = 1 ]; then
  cmake --build "$BUILD" -j "$(nproc)" --target tiledsl tiledsl_runtime
else
  cmake --build "$BUILD" -j "$(nproc)"
fi
stage=$(mktemp -d)
mkdir -p "$stage/lib" "$stage/bin"
cp -a "$BUILD"/libtiledsl.so* "$BUILD"/libtiledsl_runtime.so* "$stage/lib/"  # the versioned files and their links
if [ "${LIB_ONLY:-0}" != 1 ]; then
  cp /usr/lib/x86_64-linux-gnu/libbenchmark.so.1debian "$stage/lib/" 2>/dev/null || true
  cp "$BUILD/tests/tiledsl_tests" "$stage/bin/"
  cp "$BUILD"/examples/* "$stage/bin/"
  cp "$BUILD"/bench/bench_* "$stage/bin/" 2>/dev/null || true
  cp "$BUILD"/bench/libtiledsl_bench_shim.so "$stage/lib/" 2>/dev/null || true  # compare_attention.py's TILEDSL_SHIM
  rm -f "$stage/bin/bench_compile_scaling"  # the compiler's own speed: measured here, not there
fi
find "$stage/lib" "$stage/bin" -type f -exec strip --strip-unneeded {} + 2>/dev/null || true  # files, not links
mkdir -p "$(dirname "$PACK")"
parts="lib bin"
[ "${LIB_ONLY:-0}" = 1 ] && parts=lib
XZ_OPT=${XZ_OPT:--T0} tar -C "$stage" -cJf "$PACK" $parts  # xz on every core
rm -rf "$stage"
ls -la "$PACK"
