#!/usr/bin/env bash
# On the GPU: the single-op corpus's core archives through inductor on --device=cuda, against
# PyTorch's outputs (test/op_corpus.sh with FXC_CORPUS_CUDA=1; FXC_CORPUS=full for every
# sample, else each op's first float32 and int64 sample). Usage: op_corpus_cuda.sh <fxc>
set -u
root=$(cd "$(dirname "$0")/../../.." && pwd)
FXC_CORPUS_CUDA=1 FXC_JOBS=${FXC_JOBS:-8} FXC_SRC=$root bash "$root/test/op_corpus.sh" "$1"
