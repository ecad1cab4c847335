#!/usr/bin/env python3
"""References for nn_norm_act.fxg (see make_refs.py): training batch norm in its functional
forms, rms_norm, _safe_softmax, _softmax_backward_data and the activations relu6, selu, celu,
log_sigmoid, logit, hardshrink, softshrink and threshold. Ops that torch 1.13 lacks
(_native_batch_norm_legit_functional, _batch_norm_with_update_functional, rms_norm,
_safe_softmax) are written out with their definitions, in float64.
Usage: python3 make_refs_nn.py [folder]."""

import torch
import torch.nn.functional as F

from make_refs import write_cases

aten = torch.ops.aten


def batch_norm_train(x, w, b, rm, rv, momentum, eps):
    """(out, save_mean, save_rstd, new running_mean, new running_var) as PyTorch computes them."""
    xd = x.double()
    dims = [0] + list(range(2, x.dim()))
    mean = xd.mean(dims)
    var = xd.var(dims, unbiased=False)
    rstd = (var + eps).rsqrt()
    shape = [1, -1] + [1] * (x.dim() - 2)
    out = (xd - mean.view(shape)) * rstd.view(shape)
    if w is not None:
        out = out * w.double().view(shape)
    if b is not None:
        out = out + b.double().view(shape)
    n = x.numel() // x.size(1)
    new_rm = (1 - momentum) * rm.double() + momentum * mean
    new_rv = (1 - momentum) * rv.double() + momentum * var * n / (n - 1)
    return [t.float() for t in (out, mean, rstd, new_rm, new_rv)]


def rms_norm(x, k, w, eps):
    xd = x.double()
    dims = list(range(x.dim() - k, x.dim()))
    y = xd * (xd.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    return (y * w.double() if w is not None else y).float()


def nn_norm_act_case(g):
    x = torch.randn(2, 3, 4, 5, generator=g) * 2 + 0.5
    x[0, 0, 0, :4] = torch.tensor([0.0, 0.4, -0.6, 0.1])  # the shrink/threshold boundaries
    w, b = torch.randn(3, generator=g), torch.randn(3, generator=g)
    rm, rv = torch.randn(3, generator=g), torch.rand(3, generator=g) + 0.5
    w45 = torch.randn(4, 5, generator=g)
    y = torch.randn(3, 6, generator=g)
    y[1] = float("-inf")  # a fully masked row: _safe_softmax gives zeros
    y[2, :3] = float("-inf")
    go = torch.randn(3, 6, generator=g)
    p = torch.tensor([0.0, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 1.0, 0.42])
    i = torch.tensor([-3, 0, 1, 2, 7, 9])
    bnf = batch_norm_train(x, w, b, rm, rv, 0.1, 1e-5)
    bne = aten.native_batch_norm(x, None, b, rm.clone(), rv.clone(), False, 0.1, 1e-3)[0]
    bwu = batch_norm_train(x, w, None, rm, rv, 0.3, 1e-3)
    nbn = aten.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)
    ssm = torch.softmax(y, -1).nan_to_num(0.0)
    ssm[1] = 0.0
    sm = torch.softmax(go, 0)
    sbd = aten._softmax_backward_data(go * 2.0, sm, 0, torch.float32)
    outs = bnf + [bne, rm, rv] + [bwu[0], bwu[1], bwu[2], bwu[3], bwu[4]] + list(nbn)
    outs += [rms_norm(x, 2, w45, 1e-6), rms_norm(x, 1, None, torch.finfo(torch.float32).eps)]
    outs += [ssm, sbd, F.relu6(x), aten.relu6(i), F.selu(x), F.celu(x, 0.7), F.logsigmoid(x),
             torch.logit(p, 0.1), torch.logit(p), F.hardshrink(x, 0.4), F.softshrink(x, 0.6),
             F.threshold(x, 0.1, -2.0), aten.threshold(i, 1, 7)]
    return {"x": x, "w": w, "b": b, "rm": rm, "rv": rv, "w45": w45, "y": y, "go": go, "p": p,
            "i": i}, outs


CASES = {"nn_norm_act": nn_norm_act_case}

if __name__ == "__main__":
    write_cases(CASES)
