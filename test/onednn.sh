#!/usr/bin/env bash
# CPU convolutions through oneDNN (runtime/onednn.h): 1-D, 2-D and 3-D; grouped, depthwise,
# strided, padded and dilated convolutions with and without folded post-ops (bias, relu, clamp, hardswish, silu,
# sigmoid, x * c, a residual add, an inference batch norm) must match the eager reference
# interpreter; when libdnnl.so.2 is installed each must run as one oneDNN call with the expected
# post-ops (so the oneDNN path cannot be silently skipped), also from an .fxo artifact (loaded
# with and without oneDNN: the runtime's direct loop runs its calls then). With
# FXC_ONEDNN=0 the same graphs take the im2col/reference path, say why, and still match.
# Train mode: the gradients of the inductor train step (its forward convolutions and the
# convolution gradients on oneDNN's forward, backward-data and backward-weights primitives, then
# with FXC_ONEDNN=0: the decomposition) must match aot_eager's reference-kernel gradients; a train
# .fxo runs its gradient calls on oneDNN and, without it, on the direct loop.
# Usage: onednn.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
have_dnnl=0
if ldconfig -p 2>/dev/null | grep -q 'libdnnl\.so\.2 '; then have_dnnl=1; fi

# case <name> <expected post-ops text (- for none)> <conv_graph.py args...>
case_() {
  local name=$1 want=$2; shift 2
  local g=$tmp/$name.fxg
  python3 "$src/test/lib/conv_graph.py" "$g" "$@" || { bad "$name: graph generator failed"; return; }
  "$fxc" "$g" --device=cpu --backend=eager --run --outputs "$tmp/$name.ref.safetensors" \
    >"$tmp/eager.log" 2>&1 || { bad "$name: eager run failed" "$(cat "$tmp/eager.log")"; return; }
  check "$name: inductor matches eager" 0 "$fxc" "$g" --device=cpu --backend=inductor --no-cache \
    --run --expect "$tmp/$name.ref.safetensors" --rtol 1e-4 --atol 1e-4 --log=+inductor
  local log=$tmp/$name.log
  cp "$tmp/err" "$log"
  if [ $have_dnnl = 1 ] && [ "$want" = blas ]; then
    # oneDNN would take its gemm-based convolution: fxc's sgemm and a fused kernel instead.
    matches "$name: one sgemm, no oneDNN call" "$log" "extern calls \(1 matmul, 0 convolution, 0 fallback\)"
    has "$name: says why" "$log" "slower than a BLAS sgemm with a fused epilogue"
  elif [ $have_dnnl = 1 ]; then
    matches "$name: one oneDNN call" "$log" "extern calls \(0 matmul, 1 convolution, 0 fallback\)"
    if [ "$want" = - ]; then
      hasnt "$name: no post-ops" "$log" "with post-ops"
    else
      has "$name: post-ops '$want'" "$log" "oneDNN convolution with post-ops $want:"
    fi
    # From an .fxo artifact: primitives and (scaled) weights are prepared at load.
    check "$name: .fxo builds" 0 "$fxc" "$g" --device=cpu --backend=inductor --no-cache -o "$tmp/$name.fxo"
    check "$name: .fxo matches eager" 0 "$fxc" "$tmp/$name.fxo" --run \
      --expect "$tmp/$name.ref.safetensors" --rtol 1e-4 --atol 1e-4
    # The same .fxo where oneDNN is missing: its convolution calls run the direct loop.
    FXC_ONEDNN=0 check "$name: .fxo without oneDNN (direct loop) matches eager" 0 "$fxc" \
      "$tmp/$name.fxo" --run --expect "$tmp/$name.ref.safetensors" --rtol 1e-4 --atol 1e-4
  else
    echo "skip $name: oneDNN checks (libdnnl.so.2 is not installed)"
  fi
  # Without oneDNN: the present path, with the reason logged.
  FXC_ONEDNN=0 check "$name: FXC_ONEDNN=0 matches eager" 0 "$fxc" "$g" --device=cpu \
    --backend=inductor --no-cache --run --expect "$tmp/$name.ref.safetensors" --rtol 1e-4 \
    --atol 1e-4 --log=+inductor,graph_breaks
  hasnt "$name: FXC_ONEDNN=0 makes no oneDNN call" "$tmp/err" "onednn_convolution"
  has "$name: FXC_ONEDNN=0 says why" "$tmp/err" "oneDNN not used: FXC_ONEDNN=0"
}

# train <name>: the graph case_ wrote, differentiated.
train() {
  local name=$1 g=$tmp/$1.fxg
  "$fxc" "$g" --mode=train --backend=aot_eager --device=cpu --run \
    --outputs "$tmp/$name.grad.safetensors" >"$tmp/aot.log" 2>&1 ||
    { bad "$name: aot_eager train run failed" "$(cat "$tmp/aot.log")"; return; }
  check "$name: train gradients match aot_eager" 0 "$fxc" "$g" --mode=train --device=cpu \
    --backend=inductor --no-cache --run --expect "$tmp/$name.grad.safetensors" --rtol 1e-4 \
    --atol 1e-4 --log=+inductor
  if [ $have_dnnl = 1 ]; then
    # On oneDNN, or where it would take its gemm-based convolution on BLAS: never the fallback.
    matches "$name: the backward's convolutions are oneDNN calls or sgemms" "$tmp/err" \
      "backward.*extern calls \([0-9]+ matmul, [1-9][0-9]* convolution, 0 fallback\)"
    # convolution_backward kept whole: oneDNN's backward-data and backward-weights primitives.
    has "$name: input gradient on oneDNN" "$tmp/err" "= onednn_convolution_backward_data: oneDNN"
    has "$name: weight gradient on oneDNN" "$tmp/err" \
      "= onednn_convolution_backward_filter: oneDNN"
  fi
  FXC_ONEDNN=0 check "$name: train gradients match aot_eager with FXC_ONEDNN=0" 0 "$fxc" "$g" \
    --mode=train --device=cpu --backend=inductor --no-cache --run \
    --expect "$tmp/$name.grad.safetensors" --rtol 1e-4 --atol 1e-4
}

#     name        post-ops            N  C  H  W  K  R S st pad dil groups bias chain
case_ plain       -                   2  8 10 10 16 3 3  1  1   1   1     1    ""
case_ depthwise   -                   2 16 11 11 16 3 3  1  1   1   16    0    ""
case_ dw_strided  relu                2 12 13 13 12 3 3  2  1   1   12    1    relu
case_ grouped     "clip:0:6"          2  8  9  9 12 3 3  1  0   1   4     1    clamp
case_ dilated     hardswish           1  6 14 14  8 3 3  1  2   2   1     1    hardswish
case_ pointwise   "sum relu"          2 16  7  7 24 1 1  1  0   1   1     0    sum,relu
case_ pw_strided  "sum relu"          2 16  8  8 24 1 1  2  0   1   1     0    sum,relu
case_ conv5x5     silu                2  4 12 12  8 5 5  2  2   1   1     1    silu
case_ sigmoid     "sigmoid linear:0.5:0" 2 4 8  8  4 3 3  1  1   1   2     0    sigmoid,scale
case_ batchnorm   hardswish           2  8 12 12 16 3 3  1  1   1   1     0    bn,hardswish
case_ dw_bn       relu                2 16  9  9 16 3 3  2  1   1   16    0    bn,relu
case_ dw_dilated  -                   2  8 14 14  8 3 3  1  2   2    8    1    ""
# Squeeze-excitation's 1x1 convolution on a 1x1 map with hardsigmoid: its / 6 moves in front of
# the clip (oneDNN 2.7's brgconv_1x1 computes linear, clip, linear wrongly).
case_ se_hsig     "linear:0.166666672:0.5 clip:0:1" 2 24 1 1 72 1 1 1 0 1 1 1 hardsigmoid
# 3-D (input [N, C, H, H, W]) and 1-D (input [N, C, W]) convolutions: oneDNN runs them natively
# (inference; train graphs rewrite 3-D ones as 2-D convolutions over the frames).
case_ conv3d      relu                2  4  6  7  8 3 3  1  1   1   1     1    relu       3
case_ conv3d_bn   "sum relu"          1  6  9  8  8 3 1  2  1   1   2     0    bn,sum,relu 3
case_ conv3d_dw   -                   2  8  5  6  8 3 3  1  2   2   8     1    ""         3
case_ conv1d      silu                2  8  1 20 12 1 5  1  2   1   4     1    silu       1
case_ conv1d_pw   "sum"               2  8  1 16 16 1 1  1  0   1   1     0    sum        1
# A bias along the last dim (as long as K) is no per-channel constant: not folded.
case_ lastbias    -                   2  4  6  8  8 3 3  1  1   1   1     0    lastbias
for name in plain depthwise dw_strided grouped dilated pointwise pw_strided conv5x5 batchnorm \
  dw_dilated conv3d conv3d_dw conv1d conv1d_pw; do train $name; done
# A train .fxo (convnet fixture: PyTorch's gradients) holds the gradient calls: it reads back and
# runs them on oneDNN, and without oneDNN on the runtime's direct loop; --emit=cpp writes them
# as plain loops.
fx=$src/test/fixtures
check "convnet train .fxo builds" 0 "$fxc" --mode=train --device=cpu --no-cache \
  "$fx/convnet.pt2" -o "$tmp/convnet_train.fxo" --log=+inductor
if [ $have_dnnl = 1 ]; then
  has "convnet train .fxo: oneDNN input gradients" "$tmp/err" "= onednn_convolution_backward_data"
  has "convnet train .fxo: oneDNN weight gradients" "$tmp/err" \
    "= onednn_convolution_backward_filter"
fi
check "convnet train .fxo: gradients match PyTorch" 0 "$fxc" --run "$tmp/convnet_train.fxo" \
  --inputs "$fx/convnet.io.safetensors" --expect "$fx/convnet.grad.safetensors" --atol 1e-4
FXC_ONEDNN=0 check "convnet train .fxo without oneDNN (direct loop): gradients match PyTorch" 0 \
  "$fxc" --run "$tmp/convnet_train.fxo" --inputs "$fx/convnet.io.safetensors" \
  --expect "$fx/convnet.grad.safetensors" --atol 1e-4
check "convnet train --emit=cpp" 0 "$fxc" --mode=train --device=cpu --no-cache --emit=cpp \
  -o "$tmp/convnet_train.cpp" "$fx/convnet.pt2"
if [ $have_dnnl = 1 ]; then
  has "convnet train --emit=cpp: gradient loops" "$tmp/convnet_train.cpp" \
    "weight gradient (oneDNN in fxc)"
fi
if [ $have_dnnl = 1 ]; then
  # Inference keeps activations channels-last between convolutions (--conv-layout=auto): 2-D and
  # 3-D calls read and write NHWC / NDHWC; 1-D ones stay NCW.
  for name in plain depthwise batchnorm conv3d conv3d_bn pointwise; do
    matches "$name: channels-last call" "$tmp/$name.log" "groups [0-9]+, channels_last"
  done
  hasnt "conv1d: no channels-last call" "$tmp/conv1d.log" "channels_last"
  # NCHW as asked; a 1x1 convolution that oneDNN would run as its gemm-based convolution on NCHW
  # is fxc's sgemm with a fused epilogue there.
  for name in pointwise conv3d_bn batchnorm; do
    check "$name: --conv-layout=nchw matches eager" 0 "$fxc" "$tmp/$name.fxg" --device=cpu \
      --backend=inductor --no-cache --run --expect "$tmp/$name.ref.safetensors" --rtol 1e-4 \
      --atol 1e-4 --log=+inductor --conv-layout=nchw
    hasnt "$name: --conv-layout=nchw: no channels-last call" "$tmp/err" "channels_last"
    [ $name = pointwise ] || continue
    matches "pointwise nchw: one sgemm, no oneDNN call" "$tmp/err" "extern calls \(1 matmul, 0 convolution, 0 fallback\)"
    has "pointwise nchw: says why" "$tmp/err" "slower than a BLAS sgemm with a fused epilogue"
  done
fi
if [ $have_dnnl = 1 ]; then
  has "batch norm folded into the weights" "$tmp/batchnorm.log" "per-channel affine (folded into the weights)"
fi
exit $fail
