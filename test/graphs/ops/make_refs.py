#!/usr/bin/env python3
"""Writes <name>.in.safetensors (inputs) and <name>.ref.safetensors (PyTorch's outputs, as
output_0..) for the op-family graphs of this folder that test/ops_e2e.sh checks eager against.

Each graph's computation is written out again here in torch, from the same inputs; the ops are
called through torch.ops.aten where the overload exists in the installed torch (1.13 or later),
otherwise through the public function that computes the same thing (any.dims, all.dims,
argsort.stable appeared after 1.13). Usage: python3 make_refs.py [folder] (default: this one).
"""
import json
import os
import struct
import sys

import torch

aten = torch.ops.aten

_DT = {torch.float32: ("F32", "f"), torch.float64: ("F64", "d"), torch.int64: ("I64", "q"),
       torch.bool: ("BOOL", "?")}


def save(path, tensors):
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous()
        code, fmt = _DT[t.dtype]
        data = struct.pack("<%d%s" % (t.numel(), fmt), *t.flatten().tolist())
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, sort_keys=True).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def reduce_case(g):
    x = torch.randn(4, 6, generator=g)
    t = torch.randint(-3, 4, (3, 5), generator=g)  # ties: argmin/min take the first
    m = torch.rand(3, 5, generator=g) < 0.5
    m[0, :] = True
    m[:, 1] = False
    vm = aten.var_mean.correction(x, [1], correction=1)
    maxd = aten.max.dim(x, 1, True)
    mind = aten.min.dim(t, -1)
    outs = [
        aten.var.correction(x, [-1], correction=0, keepdim=True),
        aten.var.correction(x, None, correction=None),
        aten.var.dim(x, [0], False),
        aten.std.correction(x, [0, 1], correction=2),
        aten.std.dim(x, [-2], True, True),
        vm[0], vm[1],
        aten.amin(x, [-1], True),
        aten.amin(t, [0]),
        aten.argmin(x, -1),
        aten.argmin(t, 0, True),
        aten.max(x),
        aten.min(t),
        maxd[0], maxd[1], mind[0], mind[1],
        m.any(),
        m.any(dim=0, keepdim=True),
        m.all(),
        aten.all.dim(m, -1),
        m.all().reshape(1, 1),
        aten.logsumexp(x, [1]),
        aten.logsumexp(x, [0, -1], True),
        torch.linalg.vector_norm(x),
        torch.linalg.vector_norm(x, 1, [-1], True),
        torch.linalg.vector_norm(x, float("inf"), [0]),
        torch.linalg.vector_norm(x, 3.0, [1]),
    ]
    xn = torch.randn(3, 4, generator=g)
    xn[0, 1] = xn[2, 0] = xn[2, 3] = float("nan")
    sm = aten.std_mean.correction(x, [0], correction=0, keepdim=True)
    outs += [sm[0], sm[1], torch.nansum(xn, -1), torch.nansum(xn), torch.count_nonzero(t),
             torch.count_nonzero(t, [0])]
    return {"x": x, "t": t, "m": m, "xn": xn}, outs


def sort_case(g):
    x = torch.randn(4, 6, generator=g)
    t = torch.randint(0, 3, (3, 8), generator=g)  # many ties: stability decides the indices
    s = aten.sort(x)
    sd = aten.sort(x, 0, True)
    ss = torch.sort(t, stable=True, dim=-1, descending=True)
    ss2 = torch.sort(t, stable=True, dim=0)
    tk = aten.topk(x, 3)
    tk2 = aten.topk(x, 2, 0, False)
    outs = [s[0], s[1], sd[0], sd[1], ss[0], ss[1], ss2[0], ss2[1],
            aten.argsort(x, -1, True), torch.sort(t, stable=True, dim=-1).indices,
            tk[0], tk[1], tk2[0], tk2[1],
            aten.prod(x), aten.prod.dim_int(t, 1, True), aten.prod.dim_int(x, -1),
            torch.relu(s[0])]
    cmx, cmn = torch.cummax(x, 1), torch.cummin(t, -1)  # ties: the later index
    outs += [cmx[0], cmx[1], cmn[0], cmn[1]]
    return {"x": x, "t": t}, outs


def scatter_case(g):
    x = torch.randn(3, 5, generator=g)
    idx = torch.tensor([[0, 1, 2, 0, 1], [2, 0, 1, 1, 2]])
    idxd = torch.tensor([[0, 0, 2, 1, 1], [0, 2, 2, 1, 0]])
    idx2 = torch.tensor([[4, 0], [1, 3], [2, 2]])
    src = torch.randn(2, 5, generator=g)
    m = torch.rand(3, 5, generator=g) < 0.5
    v = torch.tensor(-7.0)
    ii = torch.tensor([2, 0, -2])
    jj = torch.tensor([1, 1, 4])
    vals = torch.randn(3, 5, generator=g)
    v3 = torch.randn(3, generator=g)
    sr = lambda r, inc=True: torch.scatter_reduce(x, 0, idxd, src, r, include_self=inc)
    outs = [aten.scatter.src(x, 0, idx, src), aten.scatter.value(x, -1, idx2, 2.5),
            sr("sum"), sr("mean", False), sr("mean"), sr("amax", False), sr("amin"),
            sr("prod", False),
            aten.index_put(x, [ii], vals), aten.index_put(x, [None, jj], v3, True),
            torch.relu(x.masked_fill(m, v))]
    s33 = torch.randn(3, 3, generator=g)
    outs += [torch.index_add(x, 1, jj, s33, alpha=2), torch.index_fill(x, 0, ii, -1.5)]
    return {"x": x, "idx": idx, "idxd": idxd, "idx2": idx2, "src": src, "m": m, "v": v,
            "ii": ii, "jj": jj, "vals": vals, "v3": v3, "s33": s33}, outs


CASES = {"reduce": reduce_case, "sort": sort_case, "scatter": scatter_case}

def write_cases(cases):
    """Writes every case's inputs and outputs into the folder named on the command line."""
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, fn in cases.items():
        g = torch.Generator().manual_seed(18)
        ins, outs = fn(g)
        save(os.path.join(folder, name + ".in.safetensors"), ins)
        save(os.path.join(folder, name + ".ref.safetensors"),
             {"output_%d" % i: o for i, o in enumerate(outs)})
        print("wrote", name, len(outs), "outputs")


if __name__ == "__main__":
    write_cases(CASES)
