#!/usr/bin/env bash
# End to end for the pooling, resampling, padding, view/copy and factory ops of issue 18: each
# graph below (test/graphs/ops/) runs on the eager backend against PyTorch's outputs
# (<name>.ref.safetensors from <name>.in.safetensors, written by test/graphs/ops/make_refs_b.py
# with torch), on inductor on the CPU against eager with no op left to an extern fallback, and
# with --device=cuda --emit=ptx its kernels must assemble with ptxas. Usage: ops_e2e_b.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
ptxas=${PTXAS:-}
[ -x "$ptxas" ] || ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
for name in pool_avg resample pad_mode view_copy factory_like; do
  g=$src/test/graphs/ops/$name.fxg
  in=$src/test/graphs/ops/$name.in.safetensors ref=$src/test/graphs/ops/$name.ref.safetensors
  inputs=()
  if [ -f "$in" ] && [ -f "$ref" ]; then
    inputs=(--inputs="$in")
    check "$name: eager matches PyTorch" 0 "$fxc" --backend=eager --run "${inputs[@]}" \
      --expect="$ref" --rtol=1e-5 --atol=1e-5 "$g"
  else
    echo "SKIP $name: no PyTorch reference (run test/graphs/ops/make_refs_b.py)"
  fi
  check "$name: eager runs" 0 "$fxc" --backend=eager --run "${inputs[@]}" \
    --outputs="$tmp/$name.eager.safetensors" "$g"
  check "$name: inductor (cpu) matches eager" 0 "$fxc" --backend=inductor --device=cpu --run \
    "${inputs[@]}" --expect="$tmp/$name.eager.safetensors" --rtol=1e-5 --atol=1e-6 \
    --log=graph_breaks "$g"
  hasnt "$name: inductor lowers every node (no fallback)" "$tmp/err" "fallback"
  check "$name: --device=cuda --emit=ptx" 0 "$fxc" --backend=inductor --device=cuda --emit=ptx \
    -o "$tmp/$name.ptx" "$g"
  if [ -x "$ptxas" ]; then
    check "$name: ptxas -arch=sm_90 assembles the PTX" 0 "$ptxas" -arch=sm_90 "$tmp/$name.ptx" \
      -o "$tmp/$name.cubin"
  else echo "SKIP $name: ptxas not found (PTXAS unset)"; fi
done
exit $fail
