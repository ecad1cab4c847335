#!/usr/bin/env bash
# The CUDA plan without a GPU: --device=cuda --emit=ptx cross-compiles, and ir_post_fusion.txt
# shows the extern calls the device would run (cuBLASLt epilogues, cuDNN convolutions), checked
# against test/golden/cuda_plan_<name>.check with FileCheck. Usage: cuda_plan.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
filecheck=$(filecheck_path)
if [ -z "$filecheck" ]; then bad "FileCheck not found (llvm-19-tools)"; exit 1; fi
for name in mlp block convnet; do
  if ! "$fxc" --device=cuda --emit=ptx -o "$tmp/$name.ptx" --debug-dir="$tmp/$name" \
      "$src/test/fixtures/$name.pt2" >"$tmp/$name.out" 2>&1; then
    bad "$name: fxc failed" "$(head -5 "$tmp/$name.out")"; continue
  fi
  post=$(find "$tmp/$name" -name ir_post_fusion.txt | head -1)
  if "$filecheck" "$src/test/golden/cuda_plan_$name.check" --input-file="$post"; then
    ok "$name CUDA plan"
  else
    bad "$name CUDA plan"
  fi
done
# --conv-layout=nchw: the convolutions take the NCHW tensors as they are.
if "$fxc" --device=cuda --emit=ptx --conv-layout=nchw -o "$tmp/n.ptx" --debug-dir="$tmp/nchw" \
    "$src/test/fixtures/convnet.pt2" >"$tmp/nchw.out" 2>&1; then
  post=$(find "$tmp/nchw" -name ir_post_fusion.txt | head -1)
  if "$filecheck" "$src/test/golden/cuda_plan_convnet_nchw.check" --input-file="$post"; then
    ok "convnet CUDA plan, --conv-layout=nchw"
  else bad "convnet CUDA plan, --conv-layout=nchw"; fi
else
  bad "convnet --conv-layout=nchw: fxc failed" "$(head -5 "$tmp/nchw.out")"
fi
# Train mode: the backward graph's convolution gradients are cuDNN backward calls.
if "$fxc" --device=cuda --emit=ptx --mode=train -o "$tmp/t.ptx" --debug-dir="$tmp/train" \
    "$src/test/fixtures/convnet.pt2" >"$tmp/train.out" 2>&1; then
  post=$(find "$tmp/train" -path '*backward*' -name ir_post_fusion.txt | head -1)
  if [ -n "$post" ] && "$filecheck" "$src/test/golden/cuda_plan_convnet_train.check" \
      --input-file="$post"; then ok "convnet train CUDA plan"
  else bad "convnet train CUDA plan"; fi
else
  bad "convnet train: fxc failed" "$(head -5 "$tmp/train.out")"
fi
# An artifact built here (no GPU) is the plan a GPU build makes: cuDNN convolutions and their
# gradients assumed, not im2col; the artifact reads back (--link parses and validates it).
if "$fxc" --device=cuda --mode=train --no-cache -o "$tmp/t.fxo" --debug-dir="$tmp/art" \
    "$src/test/fixtures/convnet.pt2" >"$tmp/art.out" 2>&1; then
  post=$(find "$tmp/art" -path '*backward*' -name ir_post_fusion.txt | head -1)
  fwd=$(find "$tmp/art" -path '*forward*' -name ir_post_fusion.txt | head -1)
  if [ -n "$post" ] && "$filecheck" "$src/test/golden/cuda_plan_convnet_train.check" \
      --input-file="$post" && grep -q "= convolution (cudnn" "$fwd"; then
    ok "convnet train CUDA artifact: cuDNN convolutions and gradients"
  else bad "convnet train CUDA artifact: not the cuDNN plan"; fi
  if "$fxc" --link -o "$tmp/l.fxo" "$tmp/t.fxo" >"$tmp/link.out" 2>&1; then
    ok "the CUDA train artifact reads back"
  else bad "the CUDA train artifact does not read back" "$(head -3 "$tmp/link.out")"; fi
else
  bad "convnet train artifact: fxc failed" "$(head -5 "$tmp/art.out")"
fi
# The fusion log names each folded activation.
if "$fxc" --device=cuda --emit=ptx -o "$tmp/m.ptx" --log=fusion "$src/test/fixtures/mlp.pt2" 2>&1 |
    grep -q "epilogue: relu = relu_bias of linear (cuBLASLt)"; then ok "fusion log names the epilogue"
else bad "fusion log: no 'epilogue: relu = relu_bias of linear'"; fi
exit $fail
