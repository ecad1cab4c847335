#!/usr/bin/env bash
# End to end for the op families of issue 18: each graph in test/graphs/ops/ runs on the eager
# backend (the reference kernels) and on inductor on the CPU, whose outputs must match eager's
# (integer and bool outputs exactly), with no op left to an extern fallback (scans, sorting,
# prod, cummax/cummin, scatter, scatter_add and index_put/index_add/index_fill excepted: they have no lowering yet, and --log=graph_breaks must
# name each of them and nothing else); and with --device=cuda --emit=ptx its kernels must
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
only_fallbacks() { # only_fallbacks <description> <file> <regex of the targets allowed to fall back>
  local others
  others=$(grep -F 'fallback' "$2" | grep -vE "fallback aten\.($3)\.[A-Za-z0-9_]+: ")
  if ! grep -qF 'fallback' "$2"; then bad "$1: no fallback named in $2"
  elif [ -n "$others" ]; then bad "$1: other nodes fall back" "$others"
  else ok "$1"; fi
}
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
  case $name in
    scan) has "$name: --log=graph_breaks names the scan's extern fallback" "$tmp/err" "cumsum" ;;
    sort) only_fallbacks "$name: only sort, argsort, topk, prod, cummax and cummin fall back" \
      "$tmp/err" "sort|argsort|topk|prod|cummax|cummin" ;;
    scatter) only_fallbacks "$name: only scatter, scatter_reduce and index_put/add/fill fall back" \
      "$tmp/err" "scatter|scatter_reduce|index_put|index_add|index_fill" ;;
    pool_backward) only_fallbacks "$name: only scatter_add (max-pool and embedding gradients) falls back" \
      "$tmp/err" "scatter_add" ;;
    *) hasnt "$name: inductor lowers every node (no fallback)" "$tmp/err" "fallback" ;;
  esac
  check "$name: --device=cuda --emit=ptx" 0 "$fxc" --backend=inductor --device=cuda --emit=ptx \
    -o "$tmp/$name.ptx" "$g"
  if [ -x "$ptxas" ]; then
    check "$name: ptxas -arch=sm_90 assembles the PTX" 0 "$ptxas" -arch=sm_90 "$tmp/$name.ptx" \
      -o "$tmp/$name.cubin"
  else missing "$name through ptxas" "ptxas not found (PTXAS unset)"; fi
done
exit $fail
