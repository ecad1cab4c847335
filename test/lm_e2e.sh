#!/usr/bin/env bash
# End to end on two real transformer exports (test/fixtures/lm): a LLaMA-style decoder (RoPE,
# GQA, causal mask) and a Swin-style windowed-attention model, default and core ATen exports,
# against PyTorch's outputs on eager and inductor (CPU), and every kernel of their PTX through
# ptxas. Usage: lm_e2e.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
lm=$src/test/fixtures/lm
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
export FXC_CACHE_DIR=$tmp/cache
ptxas=${PTXAS:-}
[ -x "$ptxas" ] || ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
for g in "$lm"/*.pt2; do
  base=$(basename "$g"); name=${base%%.*}
  io=$lm/$name.io.safetensors
  for b in eager inductor; do
    check "$b $base matches PyTorch" 0 "$fxc" --backend=$b --run --inputs "$io" --expect "$io" \
      --rtol 1e-3 --atol 1e-4 "$g"
  done
  check "$base: --device=cuda --emit=ptx" 0 "$fxc" --device=cuda --emit=ptx -o "$tmp/$name.ptx" "$g"
  if [ -x "$ptxas" ]; then
    check "$base: ptxas -arch=sm_90 assembles every kernel" 0 "$ptxas" -arch=sm_90 "$tmp/$name.ptx" -o "$tmp/$name.cubin"
  else missing "$base through ptxas" "ptxas not found (PTXAS unset)"; fi
done
exit $fail
