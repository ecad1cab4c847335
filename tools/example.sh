#!/usr/bin/env bash
# The README's main command: install what is missing, build, and run fxc on examples/mlp.fxg.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
bash "$src/tools/install-deps.sh"
bash "$src/tools/build.sh"
fxc=$src/build/fxc
echo "== the readable graph of examples/mlp.fxg"
"$fxc" --emit=fx "$src/examples/mlp.fxg"
echo "== running it (backend eager, seeded random input)"
"$fxc" --backend=eager --device=cpu --run --debug-dir="$src/build/example-debug" "$src/examples/mlp.fxg"
