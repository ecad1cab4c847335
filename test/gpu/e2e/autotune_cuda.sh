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
. "$root/test/lib/common.sh"

for io in "$fx"/*.io.safetensors; do
  name=$(basename "$io" .io.safetensors)
  g=$fx/$name.pt2
  check "tuned inference $name matches" 0 "$fxc" --device=cuda --tf32=none --max-autotune \
    --cache-dir="$cache" --log=autotune --run --inputs "$io" --expect "$io" "$g"
  has "tuned inference $name: kernels timed" "$tmp/err" ": candidates "
  if [ -f "$fx/$name.grad.safetensors" ]; then
    check "tuned train $name matches" 0 "$fxc" --device=cuda --tf32=none --max-autotune \
      --cache-dir="$cache" --mode=train --run --inputs "$io" --expect "$fx/$name.grad.safetensors" \
      --atol 1e-4 "$g"
  fi
done
has "autotune.json has matmul choices" "$cache/autotune.json" '"choice": "algo='
has "autotune.json has kernel choices" "$cache/autotune.json" '"choice": "block='
has "autotune.json is keyed by the device" "$cache/autotune.json" '"cuda NVIDIA'

# The second compile of mlp finds every choice cached: nothing is timed.
check "mlp again: matches" 0 "$fxc" --device=cuda --tf32=none --max-autotune --cache-dir="$cache" \
  --log=autotune --run --inputs "$fx/mlp.io.safetensors" --expect "$fx/mlp.io.safetensors" \
  "$fx/mlp.pt2"
has "mlp again: cached choices" "$tmp/err" ": cached "
hasnt "mlp again: nothing timed" "$tmp/err" ": candidates "

# A tuned artifact (compiled without running) runs and matches.
check "tuned block.fxo" 0 "$fxc" --device=cuda --tf32=none --max-autotune --cache-dir="$tmp/c2" \
  -o "$tmp/block.fxo" "$fx/block.pt2"
check "tuned block.fxo runs and matches" 0 "$fxc" --run "$tmp/block.fxo" \
  --inputs "$fx/block.io.safetensors" --expect "$fx/block.io.safetensors"
check "tuned --emit=ptx" 0 "$fxc" --device=cuda --tf32=none --max-autotune --cache-dir="$tmp/c2" --emit=ptx \
  -o "$tmp/block.ptx" "$fx/block.pt2"
has "tuned --emit=ptx has the kernels" "$tmp/block.ptx" "// ===== fxc kernel"

# For the record (not a pass/fail check): goal-size medians, heuristic vs tuned.
for m in block.f32 norms.bf16 mlp.f32; do
  g=$root/bench/models/$m.fxg
  [ -f "$g" ] || continue
  h=$("$fxc" --device=cuda --bench "$g" 2>&1 | grep -o 'median [0-9.]* ms' | head -1)
  t=$("$fxc" --device=cuda --tf32=none --max-autotune --cache-dir="$tmp/c3" --log=autotune --bench "$g" 2>&1)
  echo "$t" | grep -E "candidates|cached" | sed 's/^/     /' | cut -c1-220
  echo "info $m: heuristic ${h:-?}, tuned $(echo "$t" | grep -o 'median [0-9.]* ms' | head -1)"
done
exit $fail
