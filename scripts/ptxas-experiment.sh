#!/usr/bin/env bash
# ptxas with the PTX rewritten first (scripts/ptx_experiment.py, chosen by
# PTX_EXPERIMENT): set TILEDSL_PTXAS to this script, with a
# TILEDSL_CACHE_DIR of its own per rewrite (the kernel cache keys on the
# PTX before the rewrite), to time a change to the generated code on the
# GPU machine without building it into the compiler. EXPERIMENT_KEEP=dir
# keeps each rewritten PTX and its cubin there.
ptxas=${REAL_PTXAS:-/usr/local/cuda/bin/ptxas}
[ "${1:-}" = --version ] && exec "$ptxas" --version
ptx="${*: -1}"
python3 "$(dirname "$0")/ptx_experiment.py" "$ptx" 2>> "${EXPERIMENT_LOG:-/dev/null}" || exit 1
"$ptxas" "$@"
rc=$?
if [ -n "${EXPERIMENT_KEEP:-}" ]; then
  out="" prev=""
  for a in "$@"; do [ "$prev" = -o ] && out=$a; prev=$a; done
  mkdir -p "$EXPERIMENT_KEEP"
  name=$(md5sum "$ptx" | cut -c1-8)
  cp "$ptx" "$EXPERIMENT_KEEP/$name.ptx"
  [ -f "$out" ] && cp "$out" "$EXPERIMENT_KEEP/$name.cubin"
fi
exit $rc
