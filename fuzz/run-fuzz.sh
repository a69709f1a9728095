#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time (ctest in build-fuzz, and
# `make fuzz`), and says how many inputs it ran:
#   run-fuzz.sh <target binary> <seconds> <work dir> [seed file pattern]...
# The seeds are copied into <work dir>/seeds (libFuzzer reads directories);
# the corpus it grows stays in <work dir>/corpus, so later runs start from
# where this one stopped. A crash, sanitizer report, leak or an input that
# runs over FUZZ_TIMEOUT seconds (default 10, a hang: inputs take
# milliseconds) fails the run; the reproducer is written under
# <work dir>/artifacts/ and the message says where to keep it. The line
# saying how it went is also left in <work dir>/summary.txt. (The timeout is
# wall-clock time: on a machine loaded by other work, raise it.)
set -euo pipefail
bin=$1 seconds=$2 work=$3
shift 3
name=$(basename "$bin")
rm -rf "$work/seeds" "$work/artifacts" "$work/summary.txt"
mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
shopt -s nullglob
for pattern in "$@"; do
  for f in $pattern; do
    [ -f "$f" ] && cp "$f" "$work/seeds/"
  done
done
dict=()
[ -f "$bin.dict" ] && dict=(-dict="$bin.dict")

# -max_len: inputs up to 64 KiB, so the fuzzer reaches sizes where a pass
# that is quadratic in the number of ops shows up as a timeout.
# -rss_limit_mb: over 2 GiB for one input is a bug (e.g. a tile shape
# allocated eagerly), not a machine limit.
set +e
"$bin" "${dict[@]}" -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" "$work/seeds" \
  > "$work/log.txt" 2>&1
rc=$?
set -e
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log.txt" | tail -1)
if [ $rc -ne 0 ]; then
  tail -n 60 "$work/log.txt"
  echo "$name: FAILED (exit $rc) after ${runs:-?} executions; reproducer(s):"
  for f in "$work"/artifacts/*; do echo "  $f"; done
  echo "keep each one under tests/fuzz-regressions/$name/ (the main build's ctest replays them)"
  exit 1
fi
echo "$name: ${runs:-?} executions in ${seconds} s, corpus $(ls "$work/corpus" | wc -l) inputs, no failure" | tee "$work/summary.txt"
