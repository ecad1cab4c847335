#!/usr/bin/env bash
# End to end: every fixture (default and core-ATen export) through every backend reproduces
# PyTorch's outputs, and in train mode PyTorch's gradients. Usage: fixtures_e2e.sh <fxc> [backend...]
# FXC_DEVICE=cuda runs them on the GPU (test/gpu/e2e/fixtures_cuda.sh), in exact float32
# (--tf32=none: PyTorch's fixtures were computed without TF32; cuda_plan.sh checks the default).
set -u
fxc=$1; shift
backends=("$@")
[ ${#backends[@]} -gt 0 ] || backends=(eager aot_eager aot_eager_decomp_partition inductor)
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
fail=0; n=0
. "$src/test/lib/common.sh"
run() { # run <label> <args...>
  local label=$1; shift
  n=$((n + 1))
  if out=$("$fxc" "$@" 2>&1); then ok "$label"; else bad "$label" "$out"; fi
}
dev=(--device=${FXC_DEVICE:-cpu})
[ "${FXC_DEVICE:-cpu}" = cuda ] && dev+=(--tf32=none)
for b in "${backends[@]}"; do
  for io in "$fx"/*.io.safetensors; do
    name=$(basename "$io" .io.safetensors)
    for g in "$fx/$name.pt2" "$fx/$name.core.pt2"; do
      run "$b inference $(basename "$g")" --backend=$b "${dev[@]}" --run --inputs "$io" --expect "$io" "$g"
      # Gradients: PyTorch accumulates the batch sums of weight gradients in float32, so
      # elements of magnitude ~5 carry absolute errors of ~2e-5; atol 1e-4 covers that.
      if [ "$b" != eager ] && [ -f "$fx/$name.grad.safetensors" ]; then
        run "$b train $(basename "$g")" --backend=$b "${dev[@]}" --mode=train --run --inputs "$io" \
          --expect "$fx/$name.grad.safetensors" --atol 1e-4 "$g"
      fi
    done
  done
done
echo "$n runs"
exit $fail
