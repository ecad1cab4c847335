#!/usr/bin/env bash
# On the GPU: --dtype=bf16 through inductor on --device=cuda (cuBLASLt and cuDNN in bf16)
# reproduces PyTorch's float32 outputs and gradients within bf16's tolerance (test/autocast.sh
# with FXC_DEVICE=cuda). Usage: autocast_cuda.sh <fxc>
root=$(cd "$(dirname "$0")/../../.." && pwd)
FXC_DEVICE=cuda bash "$root/test/autocast.sh" "$1"
