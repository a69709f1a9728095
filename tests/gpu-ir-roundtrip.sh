#!/usr/bin/env bash
# Prints an example's kernels as GPU IR for one target (--emit=gpu, no GPU
# needed), reads the text back through tiledsl-opt (which verifies it) and
# checks that it prints the same text again.
# Usage: gpu-ir-roundtrip.sh <example binary> <target> <tiledsl-opt>
set -euo pipefail
bin=$1 target=$2 opt=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Each kernel's IR stands between the inspector's "// kernel ..." and
# "// end of kernel ..." lines (the example's banner is outside them); the
# comments are dropped too, so that both texts hold only IR.
"$bin" --target="$target" --emit=gpu > "$out/all.txt"
awk '/^\/\/ kernel /{on=1} on && !/^\/\// && !/^$/ {print} /^\/\/ end of kernel /{on=0}' "$out/all.txt" > "$out/printed.tir"
n=$(grep -c '^func @' "$out/printed.tir" || true)
[ "$n" -ge 1 ] || { echo "no function printed"; exit 1; }
"$opt" "$out/printed.tir" | grep -v '^$' > "$out/reread.tir"
if ! diff "$out/printed.tir" "$out/reread.tir" > "$out/diff"; then
  echo "the GPU IR of $(basename "$bin") for $target does not read back to the same text:"
  head -40 "$out/diff"
  exit 1
fi
echo "$n function(s) of GPU IR for $target read back unchanged"
