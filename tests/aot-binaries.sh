#!/usr/bin/env bash
# The gemm example's ahead-of-time form: the binaries tiledsl_add_aot_kernels
# wrote beside the generated source (the same bytes the program embeds),
# checked by disassembly, and the program checked to link tiledsl's runtime
# library and not its compiler.
#   AMD code objects: ELF for the named gfx target, disassembled by
#   llvm-objdump, every kernel's dot on MFMA, ending in s_endpgm.
#   NVIDIA PTX: for the named target; sm_80's dots on mma.sync; sm_90a's
#   persistent kernel, in its 16-aligned specialization (index 0), on
#   tensor copies and wgmma; assembled by ptxas when the CUDA toolkit is
#   present. With ptxas at build time the binaries are cubins: CUDA ELF
#   files, each with its PTX beside it.
# Usage: aot-binaries.sh <binaries dir> <gemm_aot program> <targets...>
set -euo pipefail
dir=$1 program=$2
shift 2
objdump=$(command -v llvm-objdump-22 || command -v llvm-objdump)
readobj=$(command -v llvm-readobj-22 || command -v llvm-readobj)
ptxas=${PTXAS:-/usr/local/cuda/bin/ptxas}
fail() { echo "FAIL: $*"; exit 1; }
checked=0
for target in "$@"; do
  files=$(ls "$dir"/*."$target".*.* 2>/dev/null || true)
  [ -n "$files" ] || fail "no binary for $target in $dir"
  for f in $files; do
    case $target in
      gfx*)
        mach=$(echo "$target" | tr a-z A-Z)
        "$readobj" --file-headers "$f" | grep -q "EF_AMDGPU_MACH_AMDGCN_$mach" || fail "$f is not a $target code object"
        asm=$("$objdump" -d "$f")
        grep -q "v_mfma_f32_" <<< "$asm" || fail "no MFMA in $f"
        grep -q "s_endpgm" <<< "$asm" || fail "no s_endpgm in $f" ;;
      sm_*)
        if [ "${f##*.}" = cubin ]; then
          # A cubin (ptxas at build time): a CUDA ELF; its PTX beside it is
          # checked on its own.
          readelf -h "$f" | grep -q "Machine:.*NVIDIA CUDA" || fail "$f is not a CUDA ELF"
          [ -f "${f%.cubin}.ptx" ] || fail "no PTX beside $f"
          checked=$((checked + 1))
          continue
        fi
        grep -q "^\.target $target\b" "$f" || fail "$f is not PTX for $target"
        grep -Eq "mma\.sync\.aligned|wgmma\.mma_async" "$f" || fail "no matrix instruction in $f"
        case $f in
          *_persistent.sm_90a.0.ptx)
            grep -q "wgmma.mma_async" "$f" || fail "no wgmma in $f"
            grep -q "cp.async.bulk.tensor" "$f" || fail "no tensor copy in $f" ;;
          *.sm_80.*)
            grep -q "mma.sync.aligned.m16n8k16" "$f" || fail "no mma.sync in $f" ;;
        esac
        if [ -x "$ptxas" ]; then
          "$ptxas" -arch="$target" "$f" -o "$f.cubin" 2> "$f.log" || { cat "$f.log"; fail "ptxas refused $f"; }
          rm -f "$f.cubin" "$f.log"
        fi ;;
    esac
    checked=$((checked + 1))
  done
done
needed=$(readelf -d "$program" | grep NEEDED)
grep -q "libtiledsl_runtime\.so" <<< "$needed" || fail "$program does not link libtiledsl_runtime"
! grep -q "libtiledsl\.so" <<< "$needed" || fail "$program links the compiler (libtiledsl.so)"
[ -x "$ptxas" ] || echo "note: ptxas not found: PTX checked as text only"
echo "PASS: $checked binaries for $* disassembled and checked; $(basename "$program") needs the runtime only"
