#!/usr/bin/env bash
# Installs what tiledsl builds with on Debian 12, only what is missing.
# Idempotent: a second run with everything present does nothing but check.
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config
  catch2 libbenchmark-dev
  llvm-22-dev llvm-22 llvm-22-tools lld-22 liblld-22-dev
  zlib1g-dev libzstd-dev xz-utils
  # DLPack's header (tl::from_dlpack, Buffer::to_dlpack)
  libdlpack-dev
  # make fuzz: clang with libFuzzer and its sanitizer runtimes
  clang-22 libfuzzer-22-dev libclang-rt-22-dev
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
