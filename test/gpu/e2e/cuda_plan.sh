#!/usr/bin/env bash
# On the GPU: the CUDA plan's extern calls and launch modes end to end. Every fixture, inference
# and train, matches PyTorch with --cuda-graphs and without; --bench replays a captured graph by
# default; the logs show the cuBLASLt epilogues (mlp: relu, block: tanh gelu) and cuDNN
# (convnet); the default TF32 convolutions and --allow-tf32 run within TF32's error, --tf32=none
# matches exactly. Usage: cuda_plan.sh <fxc>
set -u
fxc=$1
root=$(cd "$(dirname "$0")/../../.." && pwd)
fx=$root/test/fixtures
fail=0
ok() { echo "ok   $1"; }
bad() {
  echo "FAIL $1"
  [ -n "${2:-}" ] && echo "$2" | head -15 | sed 's/^/     /'
  fail=1
}
run() { # run <label> <args...>: fxc must exit 0
  local label=$1
  shift
  if out=$("$fxc" "$@" 2>&1); then ok "$label"; else bad "$label" "$out"; fi
}
expect_log() { # expect_log <label> <pattern> <args...>: fxc exits 0 and its log has the pattern
  local label=$1 pat=$2
  shift 2
  if out=$("$fxc" "$@" 2>&1) && echo "$out" | grep -q -- "$pat"; then ok "$label"
  else bad "$label (no '$pat' in the log)" "$out"; fi
}

for io in "$fx"/*.io.safetensors; do
  name=$(basename "$io" .io.safetensors)
  g=$fx/$name.pt2
  run "cuda graphs inference $name" --device=cuda --tf32=none --cuda-graphs --run --inputs "$io" \
    --expect "$io" "$g"
  run "no cuda graphs inference $name" --device=cuda --tf32=none --no-cuda-graphs --run \
    --inputs "$io" --expect "$io" "$g"
  if [ -f "$fx/$name.grad.safetensors" ]; then
    run "cuda graphs train $name" --device=cuda --tf32=none --cuda-graphs --mode=train --run \
      --inputs "$io" --expect "$fx/$name.grad.safetensors" --atol 1e-4 "$g"
  fi
done
# By default --bench replays a captured CUDA graph (plans without host calls); not with
# --no-cuda-graphs.
for name in mlp convnet block; do
  expect_log "$name: --bench replays a CUDA graph by default" '"cuda_graph": "replayed"' \
    --device=cuda --bench --json --inputs "$fx/$name.io.safetensors" "$fx/$name.pt2"
  expect_log "$name: --no-cuda-graphs --bench launches each step" '"cuda_graph": "off"' \
    --device=cuda --no-cuda-graphs --bench --json --inputs "$fx/$name.io.safetensors" "$fx/$name.pt2"
done

expect_log "mlp: addmm + relu is one cuBLASLt call" "epilogue relu_bias" --device=cuda --run \
  --log=ir_post_fusion --inputs "$fx/mlp.io.safetensors" --expect "$fx/mlp.io.safetensors" "$fx/mlp.pt2"
expect_log "block: addmm + tanh gelu is one cuBLASLt call" "epilogue gelu_tanh_bias" --device=cuda \
  --run --log=ir_post_fusion --inputs "$fx/block.io.safetensors" --expect "$fx/block.io.safetensors" \
  "$fx/block.pt2"
expect_log "convnet: convolutions through cuDNN" "= convolution (cudnn" --device=cuda --run \
  --log=ir_post_fusion --inputs "$fx/convnet.io.safetensors" --expect "$fx/convnet.io.safetensors" \
  "$fx/convnet.pt2"
# Both convolution layouts give PyTorch's float32 results (exact float32: --tf32=none).
for layout in nchw nhwc; do
  expect_log "convnet --conv-layout=$layout" "groups 1$([ $layout = nhwc ] && echo ', channels_last'))" \
    --device=cuda --tf32=none --conv-layout=$layout --run --log=ir_post_fusion \
    --inputs "$fx/convnet.io.safetensors" --expect "$fx/convnet.io.safetensors" "$fx/convnet.pt2"
done
# A plan with host fallback calls is not captured, and the perf hints say so.
for io in "$fx"/*.io.safetensors; do
  name=$(basename "$io" .io.safetensors)
  out=$("$fxc" --device=cuda --cuda-graphs --run --log=ir_post_fusion "$fx/$name.pt2" --inputs "$io" 2>&1)
  if echo "$out" | grep -q "(fallback)"; then
    expect_log "$name: fallback calls keep --cuda-graphs off" "not captured" --device=cuda \
      --cuda-graphs --run --log=perf_hints --inputs "$io" "$fx/$name.pt2"
  fi
done
# TF32: within 1e-2 of PyTorch's float32 results; --tf32=none is exact float32 (1e-5 above).
# The default (--tf32=conv, PyTorch's) rounds the convolutions only: the mlp stays exact.
run "mlp default: exact matmuls" --device=cuda --run --inputs "$fx/mlp.io.safetensors" \
  --expect "$fx/mlp.io.safetensors" "$fx/mlp.pt2"
run "convnet default: TF32 convolutions" --device=cuda --run --inputs "$fx/convnet.io.safetensors" \
  --expect "$fx/convnet.io.safetensors" --atol 1e-2 --rtol 1e-2 "$fx/convnet.pt2"
run "mlp --allow-tf32" --device=cuda --allow-tf32 --run --inputs "$fx/mlp.io.safetensors" \
  --expect "$fx/mlp.io.safetensors" --atol 1e-2 --rtol 1e-2 "$fx/mlp.pt2"
run "convnet --allow-tf32 --cuda-graphs" --device=cuda --allow-tf32 --cuda-graphs --run \
  --inputs "$fx/convnet.io.safetensors" --expect "$fx/convnet.io.safetensors" --atol 1e-2 \
  --rtol 1e-2 "$fx/convnet.pt2"
exit $fail
