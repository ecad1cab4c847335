# References for special.fxg from PyTorch (Debian's python3-torch 1.13 is enough), computed in
# float64 and rounded to each output's dtype:
# python3 test/graphs/ops/make_refs_special.py  -> special.in.safetensors, special.ref.safetensors
import os, torch
from refs_io import save_file

here = os.path.dirname(os.path.abspath(__file__))
# Both signs, both sides of the lowerings' branch points (0.5 for the reflections, 30 for the
# Bessel series), no poles (0, -1, -2, ...: NaN or inf).
xs = [-3.7, -2.5, -1.25, -0.75, -0.3, 0.01, 0.2, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 4.5, 7.0, 9.99,
      10.0, 12.5, 17.0, 25.0, 29.5, 30.5, 33.0, 41.0, 55.0, 80.0, 0.001, 1e-4, 0.4999, 0.5001, 1.9,
      -0.01, -1.5, -3.2, 5.5, 6.25, 8.125, 11.0, 13.75, 19.5, 22.0, 27.0, 35.0, 47.0, 63.0, 71.5, 88.0]
x64 = torch.tensor(xs, dtype=torch.float64)
u64 = torch.cat([torch.linspace(-0.999, 0.999, 31, dtype=torch.float64),
                 torch.tensor([0.9999999, -0.99999], dtype=torch.float64)])
k = torch.tensor([1, 2, 3, 5, 10, 20])
x, u = x64.float(), u64.float()
xd, ud = x.double(), u.double()  # the f64 inputs hold the same values as the f32 ones

def f32(fn, t):
    return fn(t.double()).float()
outs = [f32(torch.lgamma, x), f32(torch.digamma, x), f32(lambda t: torch.polygamma(1, t), x),
        f32(lambda t: torch.polygamma(3, t), x), f32(lambda t: torch.polygamma(0, t), x),
        f32(torch.erfinv, u), f32(torch.i0, x), f32(torch.special.i1, x),
        f32(torch.lgamma, k), f32(torch.i0, k),
        torch.lgamma(xd), torch.digamma(xd), torch.polygamma(2, xd), torch.erfinv(ud),
        torch.i0(xd), torch.special.i1(xd)]
save_file({"x": x, "u": u, "k": k, "xd": xd, "ud": ud}, f"{here}/special.in.safetensors")
save_file({f"output_{i}": o.contiguous() for i, o in enumerate(outs)}, f"{here}/special.ref.safetensors")
