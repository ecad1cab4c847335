#!/usr/bin/env python3
# Writes nn_index.{in,ref}.safetensors: the nn ops built from index ops (embedding_bag,
# max_unpool, segment_reduce, margin losses, antialiased and nearest-exact upsampling,
# grid_sampler_3d, fractional max pooling, pdist, convolution_backward), run through PyTorch by
# make_refs_b's interpreter (any torch >= 1.13). Usage: python3 make_refs_nnops.py
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_refs_b import HERE, run  # noqa: E402

if __name__ == "__main__":
    run(os.path.join(HERE, "nn_index.fxg"))
