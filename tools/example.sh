#!/usr/bin/env bash
# The README's main command: install what is missing, build, and compile examples/mlp.fxg with
# inductor (on CUDA when a device is present, else the CPU), run it, print its median time and
# leave a debug trace whose path it prints.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
bash "$src/tools/install-deps.sh"
bash "$src/tools/build.sh"
fxc=$src/build/fxc
echo "== the readable graph of examples/mlp.fxg"
"$fxc" --emit=fx "$src/examples/mlp.fxg"
echo "== compiled with inductor and run once (seeded random input), debug trace in build/example-debug"
"$fxc" --backend=inductor --run --debug-dir="$src/build/example-debug" "$src/examples/mlp.fxg"
echo "== timed (median of repeated runs)"
"$fxc" --backend=inductor --bench "$src/examples/mlp.fxg"
