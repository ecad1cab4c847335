#!/usr/bin/env python3
"""References for activation.fxg and norm_group.fxg (see make_refs.py): the same computations
in torch (1.13 or later), on seeded inputs. Usage: python3 make_refs_act.py [folder]."""

import torch
import torch.nn.functional as F

from make_refs import write_cases

aten = torch.ops.aten


def activation_case(g):
    x = torch.randn(2, 3, 4, 5, generator=g) * 3
    x[0, 0, 0, :3] = torch.tensor([0.0, 30.0, -30.0])  # zero, and softplus/mish's thresholds
    w = torch.rand(3, generator=g)
    w1 = torch.tensor([0.3])
    s = torch.randn(2, 4, 5, generator=g)
    i = torch.tensor([-3, 0, 1, 2, 5, 9])
    t = x * 3
    t = F.hardtanh(t, -1.0, 1.0)
    t = t + x
    q = F.mish(F.leaky_relu(-x, 0.5))
    outs = [F.hardtanh(x, -0.5, 0.75), F.relu6(x), F.leaky_relu(x, 0.2), F.leaky_relu(x),
            aten.elu(x, 1.5, 1.0507, 2.0), F.softplus(x, 2.0, 3.0), F.mish(x),
            torch.clamp_min(x, 0.25), torch.clamp_max(x, -0.25), torch.clamp_min(i, 2),
            F.prelu(x, w), F.prelu(x, w1), F.glu(x, -2), torch.full_like(x, 2.5),
            torch.select_scatter(x, s, 1, -1), t * 2, t, q]
    outs += list(torch.chunk(x, 3, -1)) + [F.dropout(-x, 0.5, False, True)]
    return {"x": x, "w": w, "w1": w1, "s": s, "i": i}, outs


def norm_group_case(g):
    x = torch.randn(2, 6, 4, 3, generator=g) * 2 + 1
    w, b = torch.randn(6, generator=g), torch.randn(6, generator=g)
    rm, rv = torch.randn(6, generator=g), torch.rand(6, generator=g) + 0.5
    ngn = aten.native_group_norm(x, w, None, 2, 6, 12, 6, 1e-3)
    bn = aten.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)
    outs = [F.group_norm(x, 3, w, b, 1e-5), F.group_norm(x, 2), ngn[0], ngn[1], ngn[2],
            F.instance_norm(x, None, None, w, b, True, 0.1, 1e-5),
            F.instance_norm(x, rm, rv, None, None, False, 0.1, 1e-5), bn[0], bn[1], bn[2]]
    return {"x": x, "w": w, "b": b, "rm": rm, "rv": rv}, outs


def mutate_view_case(g):
    x = torch.randn(4, 6, generator=g)
    v = torch.tensor(-1.5)
    y = torch.randn(7, generator=g)
    z = x.new_zeros(5, 7)
    z[0:-2, 1:4] = v
    z[-2:, 5:7] = 3.0
    z[1] += y
    return {"x": x, "v": v, "y": y}, [z, z * 2]


def inplace_case(g):
    # In-place ops computed through their functional ops (passes/decompose.cpp: inplace_composite).
    x = torch.randn(4, 6, generator=g)
    y = torch.randn(6, generator=g)
    m = torch.rand(4, 6, generator=g) < 0.3
    i = torch.randint(1, 10, (4, 6), generator=g)
    idx = torch.tensor([4, 1])
    v = torch.tensor(0.75)
    a = x.clone()
    a.mul_(y)
    a.masked_fill_(m, -2.0)
    a[1:3].add_(1.0, alpha=2)
    a.sub_(y, alpha=0.5)
    a.clamp_(-1.5, 1.5)
    a.pow_(3)
    b = x.clone()
    b.sigmoid_()
    b.div_(0.125, rounding_mode="floor")
    b.index_fill_(1, idx, 9.0)
    b.cumsum_(0)
    b.lt_(a)
    j = i.clone()
    j.bitwise_and_(6)
    j.remainder_(-4)
    j.floor_divide_(i)
    c = x.clone()
    c.exp_()
    c.mul_(0.5)
    c.masked_fill_(m, v)
    d = x.clone()
    d.addcmul_(x, y, value=0.5)
    d.lerp_(c, 0.25)
    d.square_()
    d.clamp_min_(y)
    return {"x": x, "y": y, "m": m, "i": i, "idx": idx, "v": v}, [a, b, j, c, d]


def exp_range_case(g):
    # exp over its whole float range (the CPU kernels' own expf: codegen/target_x86.cpp):
    # overflow, the subnormals, underflow to 0, and the infinities.
    special = torch.tensor([float("inf"), -1000.0, -200.0, -104.5, -103.9, -100.0, -90.0,
                            -87.4, -87.3, -20.0, -1e-8, 0.0, 1e-8, 0.5, 1.0, 20.0, 88.0, 88.7,
                            88.73, 89.5, 200.0])
    x = torch.cat([special, torch.linspace(-105.0, 89.0, 4096 - 21),
                   ])[torch.randperm(4096, generator=g)]
    y = torch.linspace(-100.0, 88.0, 4096)[torch.randperm(4096, generator=g)].reshape(4, 1024)
    return {"x": x, "y": y}, [torch.exp(x), torch.sigmoid(x), F.silu(x), torch.softmax(y, 1)]


CASES = {"activation": activation_case, "norm_group": norm_group_case,
         "mutate_view": mutate_view_case, "inplace": inplace_case, "exp_range": exp_range_case}

if __name__ == "__main__":
    write_cases(CASES)
