#!/usr/bin/env bash
# Runs the "// RUN:" lines of one FileCheck test, lit-style:
#   %s -> the test file, tiledsl-opt and FileCheck -> the built tools.
# A line ending in '\' continues on the next RUN line.
set -euo pipefail
test=$1 opt=$2 filecheck=$3
# LLVM's `not` (for error tests: `not tiledsl-opt %s 2>&1 | FileCheck %s`)
# lives next to FileCheck.
PATH="$(dirname "$(readlink -f "$filecheck")"):$PATH"
cmds=$(sed -n 's|^// RUN: \{0,1\}||p' "$test" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta')
[ -n "$cmds" ] || { echo "no RUN lines in $test"; exit 1; }
while IFS= read -r cmd; do
  cmd=${cmd//%s/$test}
  cmd=${cmd//tiledsl-opt/$opt}
  cmd=${cmd//FileCheck/$filecheck}
  echo "RUN: $cmd"
  bash -o pipefail -c "$cmd"
done <<< "$cmds"
