#!/usr/bin/env bash
# Runs on the GPU machine (the device tool), from the repository root, with
# dist/ carried: unpacks the build, then runs the [gpu] tests, the examples
# on the GPU, the C++ benchmarks and the torch/Triton comparison in one go.
# Logs and JSON go to $OUT.
# Usage: scripts/gpu-run.sh [tests] [examples] [sweep] [bench] [gemm] [attn] [ported] [decode] [ncu-gemm] [tables]
# PACK picks the package (default dist/tiledsl-gpu.tar.xz) and TL the folder
# it unpacks into (default /tmp/tl): a before/after comparison runs this
# twice in one call, each package into its own folder, each OUT its own.
#   tests     the [gpu] Catch2 cases (every op family and dot vs the interpreter)
#   examples  every example at its default GPU size
#   sweep     the gemm and attention correctness sweeps (shapes, dtypes, strides)
#   bench     softmax/layernorm GB/s with torch and Triton
#   gemm      bench_gemm (tiledsl and cuBLAS) with torch and Triton
#   attn      bench_attention with torch SDPA (cuDNN, FlashAttention) and Triton
#   ported    bench_ported (issue 17's kernels ported from Triton) with the originals
#   decode    the decode example (flash-decoding) at 32k and 131k keys
#   ncu-gemm  the gemm example's kernel (and cuBLAS's) under Nsight Compute, 4096³ and 4000³
#   aot       the gemm example's ahead-of-time form (gemm_aot, runtime
#             library only) beside the JIT form: correctness sweep, speed,
#             and the wall time of a whole run from a fresh process each
#             (the JIT's with an empty kernel cache), binary sizes
#   tables    issues 13 and 14's tables in one call, each stage bounded by
#             what is left of DEADLINE seconds (default 540) so that a
#             short lease still brings back the first ones: the gemm in
#             turns with cuBLAS (gemm_paired, TABLE_PAIRED configurations)
#             on the four shapes, attention in turns with cuDNN beside FA2
#             and Triton (compare_attention.py through the shim), Triton's
#             GEMM (compare_gemm.py), the gemm in turns again (the spread),
#             decode at 32k and 131k keys, the attention sweep, [gpu];
#             TABLE_TRY's configurations join the pairs once the example
#             passed with each; TABLE_STAGES (some of gemm attention triton
#             decode sweep tests) runs only those, TABLE_TESTS the tests' filter
#   sanitize  compute-sanitizer memcheck, racecheck and synccheck over every
#             example at its GPU size and over the [gpu] tests
#   passes-ab the optional GPU passes timed in one package: the attention
#             forward in turns with cuDNN (compare_attention_configs.py, the
#             example's default configuration) under each TILEDSL_GPU_PASSES
#             value of PASSES_AB (';'-separated; default: the default,
#             without prescale, without peel and prescale), each in a
#             process of its own, the list run
#             forward then backward; then the [gpu] tests of the attention
#             and chained-product kernels (each under the lists they name)
#             and the sweep under the first value
set -uo pipefail
OUT=${OUT:-/tmp/out}
TL=${TL:-/tmp/tl}
mkdir -p "$OUT" "$TL"
tar -xJf "${PACK:-dist/tiledsl-gpu.tar.xz}" -C "$TL"
export LD_LIBRARY_PATH=$TL/lib
export TILEDSL_CACHE_DIR=$TL/cache
# compare_attention.py times tiledsl in turns with cuDNN through the shim.
[ -f "$TL/lib/libtiledsl_bench_shim.so" ] && export TILEDSL_SHIM=$TL/lib/libtiledsl_bench_shim.so
# cuBLAS for bench_gemm: the copy torch's wheels ship.
export TILEDSL_CUBLAS=${TILEDSL_CUBLAS:-$(python3 -c 'import glob,os,torch;c=sorted(glob.glob(os.path.join(os.path.dirname(torch.__file__),"..","nvidia","**","libcublas.so.*"),recursive=True));print(c[0] if c else "")' 2>/dev/null)}
bin=$TL/bin
what=${*:-tests examples bench}
# bench_<name> (JSON), then bench/compare_<name>.py and summarize_<name>.py.
# REPEAT=n runs the benchmark n times (<name>-1.json ...: the spread within
# one call) against one run of the peers; BENCH_ARGS go to the benchmark
# (e.g. --benchmark_filter=attention_bhn).
bench_and_compare() {
  local name=$1 runs=() r json
  for r in $(seq "${REPEAT:-1}"); do
    json=$OUT/$name.json
    [ "${REPEAT:-1}" -gt 1 ] && json=$OUT/$name-$r.json
    # shellcheck disable=SC2086
    "$bin/bench_$name" ${BENCH_ARGS:-} --benchmark_format=json --benchmark_out="$json" >> "$OUT/bench-$name.log" 2>&1
    echo "bench_$name run $r rc=$?"
    runs+=("$json")
  done
  python3 "bench/compare_$name.py" "$OUT/compare_$name.json" >> "$OUT/bench-$name.log" 2>&1
  echo "compare_$name rc=$?"
  for json in "${runs[@]}"; do
    echo "== $(basename "$json")"
    python3 "bench/summarize_$name.py" "$json" "$OUT/compare_$name.json" | tee "${json%.json}-summary.md"
  done
  [ "$name" = ported ] && return  # no plots of its rows
  python3 bench/plot.py "$OUT/plots" "${runs[0]}" "$OUT/compare_$name.json" >> "$OUT/bench-$name.log"; echo "plot_$name rc=$?"
}
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
    sweep)
      # GEMM_SWEEP_CONFIGS: the gemm configurations to sweep, space-separated
      # as --config takes them (default: the example's own).
      sweep_one() {  # name, log, args...
        local name=$1 log=$2; shift 2
        timeout 300 "$bin/$name" --device=cuda --sweep "$@" > "$log" 2>&1
        echo "sweep $name $* rc=$?: $(grep -c PASS "$log") PASS, $(grep -c FAIL "$log") FAIL; $(tail -1 "$log")"
        grep FAIL "$log" | head -5
      }
      if [ -n "${GEMM_SWEEP_CONFIGS:-}" ]; then
        for c in $GEMM_SWEEP_CONFIGS; do sweep_one gemm "$OUT/sweep-gemm-$c.log" --config="$c"; done
      else
        sweep_one gemm "$OUT/sweep-gemm.log"
      fi
      sweep_one attention "$OUT/sweep-attention.log" ;;
    sanitize|sanitize-*)
      # One summary line per tool and program ("ERROR SUMMARY: n errors",
      # or "RACECHECK SUMMARY" ...); the whole reports go to $OUT.
      # sanitize-<tool> runs one tool (a device call is at most 10 minutes);
      # SANITIZE_TIMEOUT bounds each program (default 600 s),
      # SANITIZE_PROGRAMS picks them (default: every example and the
      # tests), SANITIZE_PRINT_LIMIT the reports each prints (default 100).
      # The tests tagged [bad-image] hand the driver a broken cubin on
      # purpose (memcheck would count its refusal): they run under tests.
      cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
      tools="memcheck racecheck synccheck"
      [ "$w" != sanitize ] && tools=${w#sanitize-}
      for tool in $tools; do
        for e in ${SANITIZE_PROGRAMS:-vector_add softmax layernorm gemm attention tiledsl_tests}; do
          args=(--device=cuda --reps=1)  # checked once, timed once
          [ "$e" = tiledsl_tests ] && args=("[gpu]~[bad-image]")
          TILEDSL_CACHE_DIR=$TL/cache-$tool timeout "${SANITIZE_TIMEOUT:-600}" "$cs" --tool "$tool" \
            --print-limit "${SANITIZE_PRINT_LIMIT:-100}" \
            "$bin/$e" "${args[@]}" > "/tmp/cs-$tool-$e.log" 2>&1
          rc=$?
          echo "$tool $e rc=$rc: $(grep -E 'SUMMARY' "/tmp/cs-$tool-$e.log" | tail -1) $(grep -E 'PASS|FAIL|test cases' "/tmp/cs-$tool-$e.log" | tail -1)"
          { echo "== $tool $e rc=$rc"; grep -v '^\s*$' "/tmp/cs-$tool-$e.log" | head -200; } >> "$OUT/sanitize.log"
        done
      done ;;
    aot)
      { ls -la "$bin/gemm" "$bin/gemm_aot" "$TL"/lib/libtiledsl*.so.*.*.*; } | tee "$OUT/aot-sizes.txt"
      timeout 300 "$bin/gemm_aot" --device=cuda --sweep > "$OUT/aot-sweep.log" 2>&1
      echo "gemm_aot sweep rc=$?: $(tail -1 "$OUT/aot-sweep.log")"
      for i in 1 2 3; do
        for form in gemm gemm_aot; do
          rm -rf "$TL/cache-aot"
          s0=$(date +%s.%N)
          TILEDSL_CACHE_DIR=$TL/cache-aot CUDA_CACHE_DISABLE=1 "$bin/$form" --device=cuda --mnk=256,256,256 --reps=1 \
            > "/tmp/aot-$form.log" 2>&1
          rc=$?
          echo "$form run $i rc=$rc: $(python3 -c "import sys;print(f'{(float(sys.argv[2])-float(sys.argv[1]))*1e3:.0f} ms wall')" "$s0" "$(date +%s.%N)"); $(grep -E '^gemm:|PASS|FAIL' "/tmp/aot-$form.log" | tr '\n' ' ')"
        done
      done | tee "$OUT/aot-startup.txt"
      "$bin/gemm_aot" --device=cuda | tee "$OUT/aot-4096.log"
      "$bin/gemm" --device=cuda | tee "$OUT/jit-4096.log" ;;
    bench) bench_and_compare norms ;;
    gemm) bench_and_compare gemm ;;
    attn) bench_and_compare attention ;;
    ported) bench_and_compare ported ;;
    decode)
      # Issue 14's decode: GB/s of KV cache read against a copy of the same
      # bytes, at 32k keys and longer.
      for shape in 8,32,8,32768 8,32,8,131072 1,32,8,131072; do
        timeout 120 "$bin/decode" --device=cuda --shape=$shape > /tmp/decode.log 2>&1
        echo "decode $shape rc=$?: $(grep -E 'PASS|FAIL|GB/s|rror' /tmp/decode.log | tr '\n' ' ')"
        cat /tmp/decode.log >> "$OUT/decode.log"
      done ;;
    tables)
      t0=$(date +%s)
      left() {  # the smaller of $1 and what is left of DEADLINE, at least 1
        local l=$(( ${DEADLINE:-540} - ($(date +%s) - t0) ))
        [ "$l" -lt 1 ] && l=1
        [ "$l" -lt "$1" ] && echo "$l" || echo "$1"
      }
      shapes=4096x4096x4096,8192x8192x8192,8192x8192x1024,4000x4000x4000
      # TABLE_TRY: configurations not yet run on a GPU, each checked first by
      # the example at 4000³ (30 s at most) and timed in turns only if it
      # passed, after TABLE_PAIRED's (a hang costs one check, not a table).
      TABLE_PAIRED=${TABLE_PAIRED:-128x256x64:8:3:persistent}
      for cfg in ${TABLE_TRY:-}; do
        timeout "$(left 30)" "$bin/gemm" --device=cuda --mnk=4000,4000,4000 --config="$cfg" --reps=10 > "$OUT/try-${cfg//:/_}.log" 2>&1
        rc=$?
        echo "try $cfg rc=$rc: $(grep -E 'PASS|FAIL|rror|TFLOP' "$OUT/try-${cfg//:/_}.log" | head -3 | tr '\n' ' ')"
        [ $rc = 0 ] && grep -q PASS "$OUT/try-${cfg//:/_}.log" && TABLE_PAIRED=$TABLE_PAIRED,$cfg
      done
      paired() {  # round, seconds
        TILEDSL_GEMM_SHAPES=$shapes TILEDSL_GEMM_PAIRED=$TABLE_PAIRED \
          timeout "$(left "$2")" "$bin/bench_gemm" --benchmark_filter=gemm_paired --benchmark_format=json \
          --benchmark_out="$OUT/paired-$1.json" > "$OUT/paired-$1.log" 2>&1
        echo "gemm_paired $1 rc=$? [$(( $(date +%s) - t0 )) s]"
        python3 -c "
import json, sys
for b in json.load(open(sys.argv[1]))['benchmarks']:
    print(' ', b['name'].split('/iterations')[0], b.get('error_message') or
          'tiledsl %.1f cuBLAS %.1f ratio %.3f' % (b.get('TFLOP/s', 0), b.get('cublas_TFLOP/s', 0), b.get('tl_over_cublas', 0)))
" "$OUT/paired-$1.json" 2>&1
      }
      # TABLE_STAGES: which of gemm, attention, triton, decode, sweep, tests
      # run (default all; a short call when machines are taken back often).
      stage() { [ -z "${TABLE_STAGES:-}" ] || [[ " $TABLE_STAGES " == *" $1 "* ]]; }
      stage gemm && paired 1 100
      stage attention && { ATTN_SWEEP=0 timeout "$(left 170)" python3 bench/compare_attention.py "$OUT/compare_attention.json" > "$OUT/compare-attention.log" 2>&1
      echo "compare_attention rc=$? [$(( $(date +%s) - t0 )) s]"
      python3 -c "
import json, sys
for r in json.load(open(sys.argv[1])):
    if r.get('op') == 'attention_bhn' and r.get('impl') in ('tiledsl_turns', 'cudnn_turns', 'fa2', 'triton_best'):
        rounds = ' '.join('%.1f' % (r['TFLOP/s'] * r['ms'] / x) for x in r.get('rounds_ms', []))
        print(' ', r['B'], 'x', r['H'], r['n'], 'd', r['d'], 'causal' if r['causal'] else '', r['impl'],
              '%.1f' % r['TFLOP/s'] if 'TFLOP/s' in r else r.get('error'), rounds)
" "$OUT/compare_attention.json" 2>&1; }
      # With the shim, compare_gemm.py also times tiledsl (TABLE_PAIRED's
      # configurations) in turns with torch.matmul and Triton's fastest.
      stage triton && { TILEDSL_GEMM_SHAPES=$shapes TILEDSL_GEMM_PAIRED=$TABLE_PAIRED timeout "$(left 200)" python3 bench/compare_gemm.py "$OUT/compare_gemm.json" > "$OUT/compare-gemm.log" 2>&1
        echo "compare_gemm rc=$? [$(( $(date +%s) - t0 )) s]"; grep -A100 "^torch .*triton" "$OUT/compare-gemm.log" | cut -c1-200; }
      stage gemm && paired 2 90
      stage decode && for shape in 8,32,8,32768 1,32,8,131072; do
        timeout "$(left 30)" "$bin/decode" --device=cuda --shape=$shape > /tmp/decode.log 2>&1
        echo "decode $shape rc=$?: $(grep -E 'PASS|FAIL|GB/s|rror' /tmp/decode.log | tr '\n' ' ')"
      done
      stage sweep && { timeout "$(left 100)" "$bin/attention" --device=cuda --sweep > "$OUT/sweep-attention.log" 2>&1
        echo "attention sweep rc=$?: $(grep -c PASS "$OUT/sweep-attention.log") PASS, $(grep -c FAIL "$OUT/sweep-attention.log") FAIL"; }
      stage tests && { timeout "$(left 200)" "$bin/tiledsl_tests" "${TABLE_TESTS:-[gpu]}" > "$OUT/gpu-tests.log" 2>&1
        echo "gpu tests rc=$?: $(tail -3 "$OUT/gpu-tests.log" | tr '\n' ' ') [$(( $(date +%s) - t0 )) s]"; }
      true ;;
    passes-ab)
      IFS=';' read -r -a lists <<< "${PASSES_AB:-;-prescale-accumulator;-peel-last-iteration,-prescale-accumulator}"
      order=("${lists[@]}")
      for ((i = ${#lists[@]} - 1; i >= 0; i--)); do order+=("${lists[$i]}"); done
      round=0
      for passes in "${order[@]}"; do
        round=$((round + 1))
        TILEDSL_GPU_PASSES="$passes" ATTN_CONFIGS=default TURNS=${TURNS:-5} \
          ATTN_SHAPES="${AB_SHAPES:-4,32,4096,128,0;4,32,4096,128,1;8,16,2048,64,0;2,16,8192,128,1}" \
          timeout 150 python3 bench/compare_attention_configs.py > "$OUT/ab-$round.log" 2>&1
        echo "== round $round passes '$passes' rc=$?"; grep -v '^\s*$' "$OUT/ab-$round.log" | tail -8 | cut -c1-160
      done
      TILEDSL_GPU_PASSES="${lists[0]}" timeout 120 "$bin/attention" --device=cuda --sweep > "$OUT/sweep-attention.log" 2>&1
      echo "attention sweep ('${lists[0]}') rc=$?: $(grep -c PASS "$OUT/sweep-attention.log") PASS, $(grep -c FAIL "$OUT/sweep-attention.log") FAIL"
      timeout 200 "$bin/tiledsl_tests" "*attention*,a loop's chain of products*" > "$OUT/gpu-tests-ab.log" 2>&1
      echo "gpu tests rc=$?: $(tail -3 "$OUT/gpu-tests-ab.log" | tr '\n' ' ')" ;;
    ncu-gemm)
      # The gemm example's kernel under Nsight Compute at each of
      # NCU_SHAPES (M,N,K; default 4096³ and 4000³), one launch after the
      # warm-up, in each of NCU_CONFIGS (default the sm_90a one), and with
      # NCU_CUBLAS=1 torch's matmul (cuBLAS) at the same shapes: speed of
      # light, memory, occupancy and warp stalls, L2 requests, and the
      # shared-memory banks' reads and writes beside the tensor pipe's
      # active cycles (docs/hopper-plan.md: is a tile bound by shared
      # memory's 128 bytes a clock), as CSV.
      ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
      metrics=lts__t_requests_srcunit_tex.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sectors.sum,lts__t_requests.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct
      "$ncu" --query-metrics --chip gh100 > /tmp/ncu-metrics.txt 2>&1
      for m in l1tex__data_bank_reads l1tex__data_bank_writes sm__pipe_tensor_op_gmma_cycles_active; do
        grep -q "^$m " /tmp/ncu-metrics.txt && metrics="$metrics,$m.sum,$m.avg.pct_of_peak_sustained_elapsed"
      done
      ncu_one() {  # csv, program and arguments
        local csv=$1; shift
        "$ncu" -k regex:"${NCU_KERNEL:-gemm}" --launch-skip 3 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
          --section MemoryWorkloadAnalysis_Tables --section Occupancy --section WarpStateStats --section LaunchStats \
          --metrics "$metrics" --csv --page details "$@" > "$csv" 2> /tmp/ncu.err
        echo "ncu $(basename "$csv") rc=$?: $(tail -2 /tmp/ncu.err | tr '\n' ' ')"
        grep -E 'Duration|Throughput|Hit Rate|lts__t_|dram__bytes|l1tex__data_bank|gmma|Registers|Stall|Achieved Occupancy|Elapsed Cycles|SM Frequency' \
          "$csv" | awk -F'","' '{print $(NF-2)" ["$(NF-1)"] "$NF}' | head -48
      }
      for mnk in ${NCU_SHAPES:-4096,4096,4096 4000,4000,4000}; do
        for cfg in ${NCU_CONFIGS:-128x256x64:8:3:persistent}; do
          ncu_one "$OUT/ncu-${mnk//,/x}-$cfg.csv" "$bin/gemm" --device=cuda --mnk="$mnk" --reps=5 --config="$cfg"
        done
        if [ "${NCU_CUBLAS:-0}" = 1 ]; then
          NCU_KERNEL="nvjet|gemm|sm90" ncu_one "$OUT/ncu-${mnk//,/x}-cublas.csv" python3 -c "
import sys, torch
m, n, k = (int(x) for x in sys.argv[1].split(','))
a = torch.randn(m, k, device='cuda', dtype=torch.bfloat16); b = torch.randn(k, n, device='cuda', dtype=torch.bfloat16)
for _ in range(5): c = a @ b
torch.cuda.synchronize()" "$mnk"
        fi
      done ;;
  esac
done
