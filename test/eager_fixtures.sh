#!/usr/bin/env bash
# End to end: every fixture (default and core-ATen export) run by the eager backend reproduces
# PyTorch's outputs within the default float32 tolerances. Usage: eager_fixtures.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
fail=0; n=0
for io in "$fx"/*.io.safetensors; do
  name=$(basename "$io" .io.safetensors)
  for g in "$fx/$name.pt2" "$fx/$name.core.pt2"; do
    n=$((n + 1))
    if out=$("$fxc" --backend=eager --device=cpu --run --inputs "$io" --expect "$io" "$g" 2>&1); then
      echo "ok   $(basename "$g")"
    else
      echo "FAIL $(basename "$g")"; echo "$out" | sed 's/^/     /'; fail=1
    fi
  done
done
[ "$n" -eq 12 ] || { echo "FAIL: expected 12 fixture graphs, found $n"; fail=1; }
exit $fail
