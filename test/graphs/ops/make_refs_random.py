# Inputs for random.fxg (python3 test/graphs/ops/make_refs_random.py -> random.in.safetensors).
# There is no random.ref.safetensors: fxc's random ops draw from Philox keyed by --seed and the
# node's name (docs/random.md), not from PyTorch's generator, so test/random_ops.sh checks their
# distributions and that eager and inductor agree bit for bit instead.
import os, torch
from refs_io import save_file

here = os.path.dirname(os.path.abspath(__file__))
gen = torch.Generator().manual_seed(0)
x = torch.randn(64, 32, generator=gen)
p = torch.rand(16, 16, generator=gen)
g = torch.randn(64, 32, generator=gen)
save_file({"x": x, "p": p, "g": g}, f"{here}/random.in.safetensors")
