# References for masked_scatter.fxg from PyTorch (Debian's python3-torch 1.13 is enough):
# python3 test/graphs/ops/make_refs_masked_scatter.py -> masked_scatter.{in,ref}.safetensors
import os, torch
from refs_io import save_file

here = os.path.dirname(os.path.abspath(__file__))
g = torch.Generator().manual_seed(0)
x = torch.randn(4, 6, generator=g)
m = torch.rand(4, 6, generator=g) > 0.4
mr = torch.tensor([True, False, True, True, False, True])
s = torch.randn(5, 6, generator=g)
xi = torch.arange(3).reshape(3, 1) * 100
mi = torch.rand(3, 4, generator=g) > 0.5
si = torch.arange(12) + 1
outs = [x.masked_scatter(m, s), x.masked_scatter(mr, s), x.t().masked_scatter(m.t(), s),
        xi.masked_scatter(mi, si)]
save_file({"x": x, "m": m, "mr": mr, "s": s, "xi": xi, "mi": mi, "si": si},
          f"{here}/masked_scatter.in.safetensors")
save_file({f"output_{i}": o.contiguous() for i, o in enumerate(outs)},
          f"{here}/masked_scatter.ref.safetensors")
