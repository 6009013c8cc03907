#!/usr/bin/env bash
# Installs the Debian packages this project builds and tests with. Idempotent: it runs
# `apt-get update` (once) only when a package is missing, and uses sudo only when not root.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  clang-format clang libclang-rt-14-dev lld
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libfmt-dev nlohmann-json3-dev libxxhash-dev libabsl-dev
  python3 python3-matplotlib wamerican
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "setup.sh: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
fi
echo "setup.sh: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
