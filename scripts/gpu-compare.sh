#!/usr/bin/env bash
# Before/after on the GPU machine, in one call: runs the examples at their
# GPU sizes and the C++ benchmarks (bench_norms, bench_gemm with cuBLAS,
# bench_attention) of two packages in turn, in the order given, then the
# torch/Triton peers once (PEERS=0 skips them). A second call with the order
# reversed gives the second measurement. Logs and JSON go to
# $OUT/<label>/, packed at the end into $OUT/results.tgz (a call returns
# at most 8 files); bench/summarize_compare.py tabulates them. A package
# of the libraries alone (pack-gpu.sh's LIB_ONLY) runs the first package's
# programs with its own libraries.
# Usage: scripts/gpu-compare.sh label=dist/a.tar.xz label2=dist/b.tar.xz ...
set -uo pipefail
OUT=${OUT:-/tmp/out}
first=
for spec in "$@"; do
  label=${spec%%=*} pack=${spec#*=}
  dir=/tmp/tl-$label
  mkdir -p "$dir" "$OUT/$label"
  [ -d "$dir/lib" ] || tar -xJf "$pack" -C "$dir"
  first=${first:-$dir}
  # Programs of its own, or the first package's (with its benchmark library).
  if [ ! -d "$dir/bin" ]; then
    ln -s "$first/bin" "$dir/bin"
    for l in "$first"/lib/libbenchmark*; do [ -e "$l" ] && cp -n "$l" "$dir/lib/"; done
  fi
  export LD_LIBRARY_PATH=$dir/lib TILEDSL_CACHE_DIR=$dir/cache
  export TILEDSL_CUBLAS=${TILEDSL_CUBLAS:-$(python3 -c 'import glob,os,torch;c=sorted(glob.glob(os.path.join(os.path.dirname(torch.__file__),"..","nvidia","**","libcublas.so.*"),recursive=True));print(c[0] if c else "")' 2>/dev/null)}
  for e in vector_add softmax layernorm gemm attention; do
    timeout 120 "$dir/bin/$e" --device=cuda > "$OUT/$label/example-$e.log" 2>&1
    echo "$label $e rc=$?: $(grep -E 'PASS|FAIL|GB/s|TFLOP' "$OUT/$label/example-$e.log" | head -2 | tr '\n' ' ')"
  done
  for b in norms gemm attention; do
    "$dir/bin/bench_$b" --benchmark_format=json --benchmark_out="$OUT/$label/$b.json" > "$OUT/$label/bench-$b.log" 2>&1
    echo "$label bench_$b rc=$?"
  done
done
if [ "${PEERS:-1}" != 0 ]; then
  for b in norms gemm attention; do
    python3 "bench/compare_$b.py" "$OUT/compare_$b.json" > "$OUT/compare-$b.log" 2>&1
    echo "compare_$b rc=$?"
  done
fi
labels=()
for spec in "$@"; do labels+=("${spec%%=*}"); done
(cd "$OUT" && tar -czf results.tgz "${labels[@]}" $(ls compare* 2>/dev/null) && rm -rf "${labels[@]}" compare*)
