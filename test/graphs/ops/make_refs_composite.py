# References for composite_views.fxg, composite_arith.fxg and composite_index.fxg (the composite
# ops of issue 18) from PyTorch (Debian's python3-torch 1.13 is enough):
# python3 test/graphs/ops/make_refs_composite.py  -> composite_*.in/ref.safetensors
import os, torch
import torch.nn.functional as F
from refs_io import save_file

here = os.path.dirname(os.path.abspath(__file__))
g = torch.Generator().manual_seed(18)

def rn(*s):
    return torch.randn(*s, generator=g)

def write(name, ins, outs):
    save_file(ins, f"{here}/{name}.in.safetensors")
    save_file({f"output_{i}": o.contiguous() for i, o in enumerate(outs)},
              f"{here}/{name}.ref.safetensors")

# composite_views
x, v, y, s = rn(3, 4), rn(4), rn(2, 3, 4), rn(2, 4)
k = torch.tensor([3, -1, 7])
mt = y.mT
k3 = k.narrow(0, 0, 2).float()
bt = torch.broadcast_tensors(v, y)
hs = torch.hsplit(y, [1, 5])
mg = torch.meshgrid(v, k3, indexing="xy")
dsc = torch.diagonal_scatter(x, k3, -1)
ass = torch.as_strided_scatter(x, s, (2, 4), (1, 2), 1)
write("composite_views", {"x": x, "v": v, "y": y, "s": s, "k": k},
      [v.expand_as(x), bt[0], bt[1], mt, torch.movedim(y, [0], [2]), y.narrow(-1, -3, 2),
       x.narrow_copy(0, 1, 2), y.unfold(2, 2, 1), mt.unfold(1, 2, 2), mt.ravel(),
       torch.atleast_3d(v), y.permute(2, 0, 1).contiguous(), hs[0], hs[1], hs[2],
       torch.vstack([x, v]), torch.column_stack([k, x]), -torch.rot90(y, 3, [2, 1]),
       torch.tile(x, [2]), torch.repeat_interleave(x, 2, 0), torch.diag_embed(s, -1, 0, 2),
       torch.diag(x, 1), dsc, ass, mg[0], mg[1], torch.kron(s, x), y.sum_to_size(3, 1)])

# composite_arith
a, b, m, p, q, c = rn(3), rn(4), rn(3, 4), rn(2, 3, 4), rn(2, 4, 5), rn(5, 3)
pp, qq, a3 = p.narrow(2, 0, 4), q.narrow(2, 0, 4), a.unsqueeze(1)
vm = torch.var_mean(p, [1], unbiased=False, keepdim=True)
sm = torch.std_mean(p, [0, 2])
write("composite_arith", {"a": a, "b": b, "m": m, "p": p, "q": q, "c": c},
      [torch.outer(a, b), torch.mv(m, b), torch.addmv(a, m, b, beta=0.5, alpha=2),
       torch.addr(m, a, b, beta=0), torch.addbmm(m, pp, qq), torch.baddbmm(p, pp, qq, alpha=-1.5),
       torch.addcdiv(m, b, m, value=0.25), torch.addcmul(m, a3, b, value=3),
       torch.tensordot(p, q, ([0, 2], [0, 1])), torch.linalg.vecdot(p, m, dim=1),
       torch.linalg.cross(c, a.unsqueeze(0)), torch.cross(m.t().mT, m), torch.divide(m, b), torch.max(m, b),
       torch.clamp_min(m, b), torch.clamp_max(m, a3), torch.square(m), vm[0], vm[1], sm[0],
       sm[1], torch.trapezoid(m, b), torch.trapz(p, m, dim=-2)])

# composite_index
x, s, w, n = rn(4, 5), rn(3, 5), rn(6), rn(4, 5)
n[1, 2] = n[3, 0] = n[3, 4] = float("nan")
i = torch.tensor([2, 0, 3])
r = torch.tensor([1, 3, 1])
j = torch.tensor([[0, 4], [2, 2], [1, 3], [4, 0]])
wsv, wsi = torch.sort(w)
write("composite_index", {"x": x, "i": i, "j": j, "s": s, "w": w, "n": n, "r": r},
      [torch.take(x, j), torch.take_along_dim(x, j, 1), torch.take_along_dim(x, j),
       x.put(i, w.narrow(0, 1, 3), accumulate=True), x.index_copy(0, i, s),
       x.index_reduce(0, r, s, "prod"), x.index_reduce(0, r, s, "mean", include_self=False),
       x.index_reduce(0, r, s, "amax"), x.scatter(1, j, x, reduce="multiply"), F.one_hot(j, 6),
       torch.bucketize(x, wsv, right=True), torch.searchsorted(w, x, out_int32=True, sorter=wsi),
       torch.isin(j, i, invert=True), torch.histc(x, 7, -1, 1.5), torch.histc(x, 5), torch.msort(x),
       torch.nanmean(n, [1])])
