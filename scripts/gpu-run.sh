#!/usr/bin/env bash
# Runs on the GPU machine (the device tool), from the repository root, with
# dist/ carried: unpacks the build, then runs the [gpu] tests, the examples
# on the GPU, the C++ benchmarks and the torch/Triton comparison in one go.
# Logs and JSON go to $OUT. Usage: scripts/gpu-run.sh [tests] [examples] [bench]
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/tl
tar -xJf dist/tiledsl-gpu.tar.xz -C /tmp/tl
export LD_LIBRARY_PATH=/tmp/tl/lib
export TILEDSL_CACHE_DIR=/tmp/tl/cache
bin=/tmp/tl/bin
what=${*:-tests examples bench}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
for w in $what; do
  case $w in
    tests)
      "$bin/tiledsl_tests" "[gpu]" -s --durations yes > "$OUT/gpu-tests.log" 2>&1
      echo "gpu tests rc=$?"; grep -E "SKIP|passed|failed|FAILED|GB/s" "$OUT/gpu-tests.log" | tail -15 ;;
    examples)
      for e in vector_add softmax layernorm gemm attention; do
        echo "== $e" >> "$OUT/examples.log"
        timeout 120 "$bin/$e" --device=cuda > /tmp/example.log 2>&1
        echo "example $e rc=$?: $(grep -E 'PASS|FAIL|rror|GB/s|TFLOP' /tmp/example.log | head -3 | tr '\n' ' ')"
        cat /tmp/example.log >> "$OUT/examples.log"
      done ;;
    bench)
      "$bin/bench_norms" --benchmark_format=json --benchmark_out="$OUT/norms.json" > "$OUT/bench.log" 2>&1
      echo "bench_norms rc=$?"
      python3 bench/compare_norms.py "$OUT/compare_norms.json" >> "$OUT/bench.log" 2>&1
      echo "compare_norms rc=$?"
      python3 bench/summarize_norms.py "$OUT/norms.json" "$OUT/compare_norms.json" | tee "$OUT/summary.txt" ;;
  esac
done
