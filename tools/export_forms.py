# The forms of a torch.export program beyond tensors in, tensors out (test/fixtures/forms): Python
# numbers and bools passed to forward (constant_input specs), None, tuples, dicts and numbers in
# the outputs, a train-mode BatchNorm (buffer mutations), lifted constants, keyword-only tensor
# arguments, a user input mutated in place, float16 weights, dropout in train mode, torch.cond
# (one and two results, parameters in the branches, nested, a dynamic batch, a size predicate).
# Run on the GPU machine (torch 2.11): python3 tools/export_forms.py OUTDIR
# For each NAME: NAME.pt2, NAME.core.pt2, NAME.graph.txt (signature and graph), and
# NAME.io.safetensors: the tensor inputs in order (input_<i>) and the tensor leaves of the
# outputs (output_<i>). report.json: what exported.
import os, sys, json
import torch, torch.nn as nn, torch.nn.functional as F
from safetensors.torch import save_file
out = sys.argv[1]; os.makedirs(out, exist_ok=True); torch.manual_seed(0)
class ConstArgs(nn.Module):
    def forward(s, x, scale: float = 2.0, n: int = 3, flag: bool = True, y=None):
        r = x * scale + n
        return (r.relu() if flag else r), None, x.shape[0]
class NoneOut(nn.Module):
    def __init__(s): super().__init__(); s.fc = nn.Linear(8, 8)
    def forward(s, x): return {"out": s.fc(x), "aux": None, "pair": (x.sum(), x.mean())}
class BNTrain(nn.Module):  # buffer mutation: running stats updated by a train-mode export
    def __init__(s): super().__init__(); s.c = nn.Conv2d(3, 4, 3); s.bn = nn.BatchNorm2d(4)
    def forward(s, x): return s.bn(s.c(x)).relu()
class Consts(nn.Module):  # a non-persistent buffer and a plain tensor attribute (lifted constant)
    def __init__(s):
        super().__init__(); s.register_buffer("table", torch.arange(8.0), persistent=False); s.k = torch.tensor([1.5, -2.0])
    def forward(s, x): return x * s.table + s.k.sum()
class Cond(nn.Module):
    def forward(s, x):
        return torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))
class CondMulti(nn.Module):  # two results, parameters used inside the branches (lifted operands)
    def __init__(s): super().__init__(); s.a = nn.Linear(8, 8); s.b = nn.Linear(8, 8)
    def forward(s, x):
        return torch.cond(x.mean() > 0, lambda t: (s.a(t).relu(), t * 2), lambda t: (s.b(t).tanh(), t - 1), (x,))
class CondNested(nn.Module):
    def forward(s, x, y):
        inner = lambda t, u: torch.cond(u.sum() > 0, lambda p, q: p + q, lambda p, q: p - q, (t, u))
        return torch.cond(x.sum() > 0, inner, lambda t, u: t * u, (x, y))
class CondDyn(nn.Module):  # a dynamic batch: the branches use the batch size
    def forward(s, x):
        return torch.cond(x.sum() > 0, lambda t: t.sum(0) / t.shape[0], lambda t: t.amax(0), (x,))
class CondShape(nn.Module):  # the predicate is a symbolic size
    def forward(s, x):
        return torch.cond(x.shape[0] > 4, lambda t: t.sin(), lambda t: t.cos(), (x,))
class KwOnly(nn.Module):
    def forward(s, x, *, mask): return x.masked_fill(mask, 0.0)
class InplaceInput(nn.Module):  # a user input mutated in place
    def forward(s, x, acc): acc.add_(x); return acc * 2
class Half(nn.Module):
    def __init__(s): super().__init__(); s.fc = nn.Linear(8, 8).half()
    def forward(s, x): return F.gelu(s.fc(x.half())).float()
class Dropout(nn.Module):
    def __init__(s): super().__init__(); s.d = nn.Dropout(0.0); s.fc = nn.Linear(8, 8)
    def forward(s, x): return s.d(s.fc(x))
x8 = torch.randn(4, 8)
cases = {
    "constargs": (ConstArgs(), (x8,), {"scale": 0.5, "n": 2, "flag": True}),
    "noneout": (NoneOut(), (x8,), {}),
    "bntrain": (BNTrain().train(), (torch.randn(2, 3, 6, 6),), {}),
    "consts": (Consts(), (x8,), {}),
    "cond": (Cond(), (x8,), {}),
    "kwonly": (KwOnly(), (x8,), {"mask": x8 > 0}),
    "inplace": (InplaceInput(), (x8, torch.randn(4, 8)), {}),
    "half": (Half(), (x8,), {}),
    "dropout_train": (Dropout().train(), (x8,), {}),
    "cond_multi": (CondMulti(), (x8,), {}),
    "cond_nested": (CondNested(), (x8, torch.randn(4, 8)), {}),
    "cond_dyn": (CondDyn(), (x8,), {}, {"x": {0: torch.export.Dim("batch", min=2, max=64)}}),
    "cond_shape": (CondShape(), (x8,), {}, {"x": {0: torch.export.Dim("batch", min=2, max=64)}}),
}
rep = {}
# torch.cond's cases also get NAME.neg.io.safetensors (inputs negated: the other branch), and
# the train step's gradients of the sum of the outputs (NAME.grad.safetensors: grad.<param>,
# output_<i>) where the model has parameters.
def save_io(m, args, kw, path):
    flat = [a for a in list(args) + [kw[k] for k in kw] if isinstance(a, torch.Tensor)]
    with torch.no_grad():
        o = m(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args],
              **{k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in kw.items()})
    leaves = [t for t in torch.utils._pytree.tree_leaves(o) if isinstance(t, torch.Tensor)]
    t = {f"input_{i}": v.contiguous() for i, v in enumerate(flat)}
    t.update({f"output_{i}": v.contiguous() for i, v in enumerate(leaves)})
    save_file(t, path)
for name, (m, args, kw, *dyn) in cases.items():
    try:
        ep = torch.export.export(m, args, kw, dynamic_shapes=dyn[0] if dyn else None)
        torch.export.save(ep, f"{out}/{name}.pt2")
        core = ep.run_decompositions(); torch.export.save(core, f"{out}/{name}.core.pt2")
        open(f"{out}/{name}.graph.txt", "w").write(str(ep.graph_signature) + "\n" + str(ep.graph))
        # inputs as the flat user inputs of the program, outputs as the flat tensor outputs
        save_io(ep.module(), args, kw, f"{out}/{name}.io.safetensors")
        if name.startswith("cond"):
            neg = tuple(-a if isinstance(a, torch.Tensor) else a for a in args)
            save_io(ep.module(), neg, kw, f"{out}/{name}.neg.io.safetensors")
            if dyn:  # another size in the range
                big = tuple(torch.cat([a, a[:2] * 0.5]) if isinstance(a, torch.Tensor) else a for a in args)
                save_io(ep.module(), big, kw, f"{out}/{name}.b6.io.safetensors")
        if name.startswith("cond") and list(m.parameters()):
            m.zero_grad(set_to_none=True)
            o = m(*args, **kw)
            sum(t.sum() for t in torch.utils._pytree.tree_leaves(o)).backward()
            g = {f"grad.{k}": p.grad.detach().contiguous() for k, p in m.named_parameters() if p.grad is not None}
            g.update({f"output_{i}": t.detach().contiguous() for i, t in enumerate(torch.utils._pytree.tree_leaves(o))})
            save_file(g, f"{out}/{name}.grad.safetensors")
        rep[name] = {"ok": True, "sig": str(ep.graph_signature)[:1500]}
        print(name, "ok")
    except Exception as e:
        rep[name] = {"error": repr(e)[:500]}; print(name, "ERROR", repr(e)[:300])
json.dump(rep, open(f"{out}/report.json", "w"), indent=1)
