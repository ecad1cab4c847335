#!/usr/bin/env bash
# End to end for the op families of issue 18: each graph in test/graphs/ops/ runs on the eager
# backend (the reference kernels) and on inductor on the CPU, whose outputs must match eager's
# (integer and bool outputs exactly), with no op left to an extern fallback (--log=graph_breaks
# names none: scans, sorting, prod, scatters, index_put/index_add/index_fill, index.Tensor,
# roll and as_strided are lowered too); and with --device=cuda --emit=ptx its kernels must
# assemble with ptxas. Where <name>.in.safetensors and <name>.ref.safetensors exist (written by
# test/graphs/ops/make_refs.py from PyTorch), both backends run on those inputs and eager must
# match PyTorch's outputs. Usage: ops_e2e.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
ptxas=${PTXAS:-}
[ -x "$ptxas" ] || ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
for g in "$src"/test/graphs/ops/*.fxg; do
  name=$(basename "$g" .fxg)
  in=${g%.fxg}.in.safetensors ref=${g%.fxg}.ref.safetensors
  inputs=()
  [ -f "$in" ] && inputs=(--inputs="$in")
  check "$name: eager runs" 0 "$fxc" --backend=eager --run "${inputs[@]}" \
    --outputs="$tmp/$name.eager.safetensors" "$g"
  if [ -f "$in" ] && [ -f "$ref" ]; then
    check "$name: eager matches PyTorch" 0 "$fxc" --backend=eager --run "${inputs[@]}" \
      --expect="$ref" --rtol=1e-5 --atol=1e-5 "$g"
  fi
  check "$name: inductor (cpu) matches eager" 0 "$fxc" --backend=inductor --device=cpu --run \
    "${inputs[@]}" --expect="$tmp/$name.eager.safetensors" --rtol=1e-5 --atol=1e-6 \
    --log=graph_breaks "$g"
  hasnt "$name: inductor lowers every node (no fallback)" "$tmp/err" "fallback"
  check "$name: --device=cuda --emit=ptx" 0 "$fxc" --backend=inductor --device=cuda --emit=ptx \
    -o "$tmp/$name.ptx" "$g"
  if [ -x "$ptxas" ]; then
    check "$name: ptxas -arch=sm_90 assembles the PTX" 0 "$ptxas" -arch=sm_90 "$tmp/$name.ptx" \
      -o "$tmp/$name.cubin"
  else missing "$name through ptxas" "ptxas not found (PTXAS unset)"; fi
done
exit $fail
