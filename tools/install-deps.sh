#!/usr/bin/env bash
# Installs fxc's build and test dependencies from Debian 12's packages (run as root).
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config
      llvm-19-dev llvm-19-tools clang-19 clang-format-19 libclang-rt-19-dev libcli11-dev nlohmann-json3-dev doctest-dev
      libzstd-dev zstd libzip-dev libdeflate-dev libxxhash-dev libopenblas-dev libdnnl-dev python3 python3-numpy binutils groff-base
      bsdutils
      libhiredis-dev redis-server \
      chromium)  # chromium: test/report.sh loads every --report page headless
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
