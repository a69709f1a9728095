#!/usr/bin/env bash
# Compiles an example's kernels for one target without a GPU (--emit=asm)
# and checks the result: NVIDIA PTX must assemble with ptxas (when the CUDA
# toolkit is present), AMD assembly must end its kernels with s_endpgm.
# Usage: emit-example.sh <example binary> <target> [--expect=REGEX] [--no-scratch] [--arg=ARG ...]
#   --expect=REGEX  every kernel's code must match the extended regex (e.g.
#                   'v_mfma_' for the matrix instructions of a dot)
#   --no-scratch    AMD: every kernel descriptor declares no private segment
#                   (no spills, no stack)
#   --arg=ARG       passed to the example (e.g. --arg=--varlen=100,7)
set -euo pipefail
bin=$1 target=$2
shift 2
expect="" no_scratch=0 args=()
for arg in "$@"; do
  case $arg in
    --expect=*) expect=${arg#--expect=} ;;
    --no-scratch) no_scratch=1 ;;
    --arg=*) args+=("${arg#--arg=}") ;;
    *) echo "emit-example.sh: unknown option '$arg'"; exit 2 ;;
  esac
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin" --target="$target" --emit=asm "${args[@]}" > "$out/all.s"
# The inspector prints one "// kernel '<name>' for <target>" header per kernel.
kernels=$(grep -c "^// kernel '" "$out/all.s" || true)
[ "$kernels" -ge 1 ] || { echo "no kernel printed"; exit 1; }
# Each kernel's code stands between its header and its end line.
awk -v dir="$out" '/^\/\/ kernel /{n++; on=1} on {print > (dir "/k" n ".s")} /^\/\/ end of kernel /{on=0}' "$out/all.s"
if [ -n "$expect" ]; then
  for f in "$out"/k*.s; do
    grep -Eq -- "$expect" "$f" || { echo "no match for '$expect' in $(head -1 "$f")"; exit 1; }
  done
fi
case $target in
  sm_*)
    ptxas=${PTXAS:-/usr/local/cuda/bin/ptxas}
    if [ ! -x "$ptxas" ]; then echo "[SKIP] ptxas not found: $kernels kernel(s) not assembled"; exit 0; fi
    for f in "$out"/k*.s; do
      cp "$f" "${f%.s}.ptx"
      "$ptxas" -arch="$target" -v "${f%.s}.ptx" -o "$f.cubin" 2> "$f.log" || { cat "$f.log"; exit 1; }
      if grep -q "bytes spill stores" "$f.log" && ! grep -q " 0 bytes spill stores" "$f.log"; then
        echo "note: spills in $(basename "$f"):"; grep "spill" "$f.log"
      fi
    done
    echo "$kernels kernel(s) assembled for $target" ;;
  gfx*)
    n=$(grep -c "s_endpgm" "$out/all.s" || true)
    [ "$n" -ge "$kernels" ] || { echo "expected s_endpgm in each of $kernels kernels, found $n"; exit 1; }
    if [ "$no_scratch" = 1 ]; then
      scratch=$(awk '/\.amdhsa_kernel /{name=$2} /\.amdhsa_private_segment_fixed_size /{if ($2 != 0) print name ": " $2 " bytes"}' "$out/all.s")
      [ -z "$scratch" ] || { echo "scratch (private segment) in:"; echo "$scratch"; exit 1; }
    fi
    echo "$kernels kernel(s) compiled for $target" ;;
esac
