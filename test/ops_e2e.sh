#!/usr/bin/env bash
# End to end for the op families of issue 18: each graph in test/graphs/ops/ runs on the eager
# backend (the reference kernels) and on inductor on the CPU, whose outputs must match eager's
# (integer and bool outputs exactly), with no op left to an extern fallback (scans excepted:
# they have no lowering yet and must be named by --log=graph_breaks); and with
# --device=cuda --emit=ptx its kernels must assemble with ptxas. Usage: ops_e2e.sh <fxc>
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
  check "$name: eager runs" 0 "$fxc" --backend=eager --run --outputs="$tmp/$name.eager.safetensors" "$g"
  check "$name: inductor (cpu) matches eager" 0 "$fxc" --backend=inductor --device=cpu --run \
    --expect="$tmp/$name.eager.safetensors" --rtol=1e-5 --atol=1e-6 --log=graph_breaks "$g"
  case $name in
    scan) has "$name: --log=graph_breaks names the scan's extern fallback" "$tmp/err" "cumsum" ;;
    *) hasnt "$name: inductor lowers every node (no fallback)" "$tmp/err" "fallback" ;;
  esac
  check "$name: --device=cuda --emit=ptx" 0 "$fxc" --backend=inductor --device=cuda --emit=ptx \
    -o "$tmp/$name.ptx" "$g"
  if [ -x "$ptxas" ]; then
    check "$name: ptxas -arch=sm_90 assembles the PTX" 0 "$ptxas" -arch=sm_90 "$tmp/$name.ptx" \
      -o "$tmp/$name.cubin"
  else echo "SKIP $name: ptxas not found (PTXAS unset)"; fi
done
exit $fail
