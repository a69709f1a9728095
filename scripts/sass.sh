#!/usr/bin/env bash
# The SASS of a kernel's PTX, read here without a GPU: ptxas (this
# machine's CUDA 13) assembles it for sm_90a, and cuobjdump prints it.
# This machine has no cuobjdump of CUDA 13; Debian's non-free
# nvidia-cuda-toolkit (CUDA 11.8) has one, which reads CUDA 13's cubins
# once their ELF header is given the older layout (ABI version 7, the
# architecture in e_flags as CUDA 11 wrote it): the instructions are the
# same bytes. The package is fetched once into CACHE (no install).
#
#   scripts/sass.sh kernel.ptx [out.sass]    (default: kernel.sass)
#
# A kernel's PTX: `examples/attention --target=sm_90a --emit=asm` and the
# like (one kernel a file: cut at each "// kernel" line). What it showed:
# docs/perf.md run 91.
set -euo pipefail
ptx=$1
out=${2:-${ptx%.ptx}.sass}
CACHE=${CACHE:-$HOME/.cache/tiledsl/cuda-11.8}
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
ARCH=${ARCH:-sm_90a}
cuobjdump=$CACHE/usr/bin/cuobjdump
if [ ! -x "$cuobjdump" ]; then
  mkdir -p "$CACHE/lists/partial" && cd "$CACHE"
  list=$(mktemp)
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > "$list.sources"
  apt-get update -o Dir::Etc::sourcelist="$list.sources" -o Dir::Etc::sourceparts=- \
    -o Dir::State::Lists="$CACHE/lists" > /dev/null
  apt-get download -o Dir::Etc::sourcelist="$list.sources" -o Dir::Etc::sourceparts=- \
    -o Dir::State::Lists="$CACHE/lists" nvidia-cuda-toolkit > /dev/null 2>&1
  dpkg -x nvidia-cuda-toolkit_*.deb "$CACHE" && rm -f nvidia-cuda-toolkit_*.deb "$list" "$list.sources"
  cd - > /dev/null
fi
cubin=$(mktemp --suffix=.cubin)
trap 'rm -f "$cubin"' EXIT
"$PTXAS" -arch="$ARCH" -o "$cubin" "$ptx"
python3 - "$cubin" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
sm = (struct.unpack_from("<I", d, 0x30)[0] >> 8) & 0xff   # CUDA 13: the SM in bits 8..15
d[7], d[8] = 0x33, 7                                        # OS/ABI and ABI version 7
struct.pack_into("<I", d, 0x30, sm | 0x500 | sm << 16)     # CUDA 11: SM, 64-bit, unified texture, virtual SM
open(sys.argv[1], "wb").write(d)
PY
"$cuobjdump" -sass "$cubin" > "$out"
echo "$out: $(grep -c '^ */\*[0-9a-f]*\*/' "$out") instructions"
