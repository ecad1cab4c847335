#!/usr/bin/env bash
# Configures and builds fxc into build/ (or $FXC_BUILD_DIR) with Ninja.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${FXC_BUILD_DIR:-$src/build}
cmake -G Ninja -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=${FXC_BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
ninja -C "$build" ${FXC_TARGETS:-}
