#!/usr/bin/env bash
# End to end for 3-D convolution and pooling on a real torch.export program: test/fixtures/video/
# video3d.pt2 (conv3d, batch_norm on 5-D, max_pool3d, adaptive_avg_pool3d/1d, conv1d, diagonal;
# tools/export_video.py, torch 2.11) and its core-ATen form (convolution, max_pool3d_with_indices,
# _adaptive_avg_pool3d, ...). Eager and inductor (CPU) reproduce PyTorch's output with no
# extern fallback; train mode on inductor gives aot_eager's gradients; --device=cuda
# --emit=ptx assembles with ptxas. Usage: video_e2e.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
v=$src/test/fixtures/video
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
ptxas=${PTXAS:-}
[ -x "$ptxas" ] || ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
io=$v/video3d.io.safetensors
for g in video3d video3d.core; do
  check "$g: eager matches PyTorch" 0 "$fxc" --backend=eager --run --inputs="$io" --expect="$io" \
    --atol=1e-4 --rtol=1e-4 "$v/$g.pt2"
  check "$g: inductor (cpu) matches PyTorch" 0 "$fxc" --backend=inductor --run --inputs="$io" \
    --expect="$io" --atol=1e-4 --rtol=1e-4 --log=graph_breaks "$v/$g.pt2"
  hasnt "$g: inductor lowers every node (no fallback)" "$tmp/err" "fallback"
  check "$g: train mode on aot_eager" 0 "$fxc" --backend=aot_eager --mode=train --run \
    --inputs="$io" --outputs="$tmp/$g.grads.safetensors" "$v/$g.pt2"
  check "$g: train mode on inductor gives aot_eager's gradients" 0 "$fxc" --backend=inductor \
    --mode=train --run --inputs="$io" --expect="$tmp/$g.grads.safetensors" --atol=1e-4 \
    --rtol=1e-4 "$v/$g.pt2"
  check "$g: --device=cuda --emit=ptx" 0 "$fxc" --backend=inductor --device=cuda --emit=ptx \
    -o "$tmp/$g.ptx" "$v/$g.pt2"
  if [ -x "$ptxas" ]; then
    check "$g: ptxas -arch=sm_90 assembles the PTX" 0 "$ptxas" -arch=sm_90 "$tmp/$g.ptx" \
      -o "$tmp/$g.cubin"
  else missing "$g through ptxas" "ptxas not found (PTXAS unset)"; fi
done
exit $fail
