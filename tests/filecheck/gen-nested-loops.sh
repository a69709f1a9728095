#!/usr/bin/env bash
# Prints a function of N nested `for` loops with a store in the innermost
# (the generated input of verify-invalid-nesting-depth.tir):
#   func @f(%n: i32, %p: ptr<i32>) {
#   %z = constant ...          line 2
#   for %z, %n, %n {           line 3 + 2 * k for the loop k levels down
#   ^(%iK: i32):
#   ... store %p, %i<N-1>, then N times "yield" and "}".
set -euo pipefail
n=$1
echo 'func @f(%n: i32, %p: ptr<i32>) {'
echo '%z = constant {value = 0} : i32'
for ((i = 0; i < n; i++)); do
  echo 'for %z, %n, %n {'
  echo "^(%i$i: i32):"
done
echo "store %p, %i$((n - 1))"
for ((i = 0; i < n; i++)); do
  echo 'yield'
  echo '}'
done
echo '}'
