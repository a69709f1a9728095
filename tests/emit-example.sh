#!/usr/bin/env bash
# Compiles an example's kernels for one target without a GPU (--emit=asm)
# and checks the result: NVIDIA PTX must assemble with ptxas (when the CUDA
# toolkit is present), AMD assembly must end its kernels with s_endpgm.
# Usage: emit-example.sh <example binary> <target>
set -euo pipefail
bin=$1 target=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin" --target="$target" --emit=asm > "$out/all.s"
# The inspector prints one "// kernel '<name>' for <target>" header per kernel.
kernels=$(grep -c "^// kernel '" "$out/all.s" || true)
[ "$kernels" -ge 1 ] || { echo "no kernel printed"; exit 1; }
case $target in
  sm_*)
    ptxas=${PTXAS:-/usr/local/cuda/bin/ptxas}
    if [ ! -x "$ptxas" ]; then echo "[SKIP] ptxas not found: $kernels kernel(s) not assembled"; exit 0; fi
    # Each kernel's PTX stands between its header and its end line.
    awk -v dir="$out" '/^\/\/ kernel /{n++; on=1} on {print > (dir "/k" n ".ptx")} /^\/\/ end of kernel /{on=0}' "$out/all.s"
    for f in "$out"/k*.ptx; do
      "$ptxas" -arch="$target" -v "$f" -o "$f.cubin" 2> "$f.log" || { cat "$f.log"; exit 1; }
      if grep -q "bytes spill stores" "$f.log" && ! grep -q " 0 bytes spill stores" "$f.log"; then
        echo "note: spills in $(basename "$f"):"; grep "spill" "$f.log"
      fi
    done
    echo "$kernels kernel(s) assembled for $target" ;;
  gfx*)
    n=$(grep -c "s_endpgm" "$out/all.s" || true)
    [ "$n" -ge "$kernels" ] || { echo "expected s_endpgm in each of $kernels kernels, found $n"; exit 1; }
    echo "$kernels kernel(s) compiled for $target" ;;
esac
