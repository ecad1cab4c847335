#!/usr/bin/env bash
# On the GPU: --max-autotune for --device=cuda end to end. Every fixture, inference and train,
# still matches PyTorch after tuning; the log shows kernel mapping and cuBLASLt algorithm
# candidates with their times and the choice; autotune.json holds the choices and a second
# compile reuses them without timing; a tuned .fxo artifact runs and matches; --emit=ptx writes
# the chosen kernels. Then block (f32) and norms (bf16) at the goal sizes: --bench medians with
# and without tuning, for the record. Usage: autotune_cuda.sh <fxc>
set -u
fxc=$1
root=$(cd "$(dirname "$0")/../../.." && pwd)
fx=$root/test/fixtures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cache=$tmp/cache
fail=0
ok() { echo "ok   $1"; }
bad() {
  echo "FAIL $1"
  [ -n "${2:-}" ] && echo "$2" | head -20 | sed 's/^/     /'
  fail=1
}
run() { # run <label> <args...>: fxc must exit 0; its output is in $out
  local label=$1
  shift
  if out=$("$fxc" "$@" 2>&1); then ok "$label"; else bad "$label" "$out"; fi
}
has() { # has <label> <pattern>: the last run's output has the pattern
  if echo "$out" | grep -q -- "$2"; then ok "$1"; else bad "$1 (no '$2')" "$out"; fi
}

for io in "$fx"/*.io.safetensors; do
  name=$(basename "$io" .io.safetensors)
  g=$fx/$name.pt2
  run "tuned inference $name matches" --device=cuda --max-autotune --cache-dir="$cache" \
    --log=autotune --run --inputs "$io" --expect "$io" "$g"
  has "tuned inference $name: kernels timed" ": candidates "
  if [ -f "$fx/$name.grad.safetensors" ]; then
    run "tuned train $name matches" --device=cuda --max-autotune --cache-dir="$cache" \
      --mode=train --run --inputs "$io" --expect "$fx/$name.grad.safetensors" --atol 1e-4 "$g"
  fi
done
[ -s "$cache/autotune.json" ] && ok "autotune.json written" || bad "no autotune.json"
grep -q '"choice": "algo=' "$cache/autotune.json" && ok "autotune.json has matmul choices" ||
  bad "no algo= choice in autotune.json"
grep -q '"choice": "block=' "$cache/autotune.json" && ok "autotune.json has kernel choices" ||
  bad "no block= choice in autotune.json"

# The second compile of mlp finds every choice cached: nothing is timed.
run "mlp again: cached" --device=cuda --max-autotune --cache-dir="$cache" \
  --log=autotune --run --inputs "$fx/mlp.io.safetensors" --expect "$fx/mlp.io.safetensors" \
  "$fx/mlp.pt2"
has "mlp again: cached choices" ": cached "
if echo "$out" | grep -q ": candidates "; then bad "mlp again: something was timed again" "$out"
else ok "mlp again: nothing timed"; fi

# A tuned artifact (compiled without running) runs and matches.
run "tuned block.fxo" --device=cuda --max-autotune --cache-dir="$tmp/c2" -o "$tmp/block.fxo" \
  "$fx/block.pt2"
run "tuned block.fxo runs and matches" --run "$tmp/block.fxo" \
  --inputs "$fx/block.io.safetensors" --expect "$fx/block.io.safetensors"
run "tuned --emit=ptx" --device=cuda --max-autotune --cache-dir="$tmp/c2" --emit=ptx \
  -o "$tmp/block.ptx" "$fx/block.pt2"
grep -q "^// ===== fxc kernel" "$tmp/block.ptx" && ok "tuned --emit=ptx has the kernels" ||
  bad "tuned --emit=ptx" "$(head -5 "$tmp/block.ptx")"

# For the record (not a pass/fail check): goal-size medians, heuristic vs tuned.
for m in block.f32 norms.bf16 mlp.f32; do
  g=$root/bench/models/$m.fxg
  [ -f "$g" ] || continue
  h=$("$fxc" --device=cuda --bench "$g" 2>&1 | grep -o 'median [0-9.]* ms' | head -1)
  t=$("$fxc" --device=cuda --max-autotune --cache-dir="$tmp/c3" --log=autotune --bench "$g" 2>&1)
  echo "$t" | grep -E "candidates|cached" | sed 's/^/     /' | cut -c1-220
  echo "info $m: heuristic ${h:-?}, tuned $(echo "$t" | grep -o 'median [0-9.]* ms' | head -1)"
done
exit $fail
