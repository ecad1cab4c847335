#!/usr/bin/env python3
"""Writes an .fxg graph of one convolution followed by a chain of ops (test/onednn.sh).

Usage: conv_graph.py OUT.fxg N C H W K R S STRIDE PAD DIL GROUPS BIAS(0|1) CHAIN [SPATIAL]
SPATIAL is 2 by default; 3 makes the input [N, C, H, H, W] and the kernel [K, C / G, R, R, S];
1 makes them [N, C, W] and [K, C / G, S].
CHAIN is comma-separated, applied in order: relu, sigmoid, clamp (to [0, 6]), scale (x * 0.5),
sum (+ a second input of the result's shape), hardsigmoid, hardswish and silu (as decompose() writes them:
x read twice), bn (inference batch norm as decompose() writes it, with buffers), lastbias (+ a
parameter of the last dim's size, broadcast along that dim: no per-channel constant even when
that size equals K).
"""
import json
import sys


def main():
    a = sys.argv
    out = a[1]
    N, C, H, W, K, R, S, stride, pad, dil, groups = map(int, a[2:13])
    bias = a[13] == "1"
    chain = [p for p in a[14].split(",") if p] if len(a) > 14 else []
    sp = int(a[15]) if len(a) > 15 else 2
    ins = {1: [W], 2: [H, W], 3: [H, H, W]}[sp]
    ks = {1: [S], 2: [R, S], 3: [R, R, S]}[sp]
    outs = [(i + 2 * pad - dil * (k - 1) - 1) // stride + 1 for i, k in zip(ins, ks)]
    inputs = [{"name": "w", "kind": "parameter", "fqn": "conv.weight", "dtype": "f32",
               "shape": [K, C // groups] + ks, "init": {"rule": "kaiming_uniform", "seed": 1}}]
    if bias:
        inputs.append({"name": "b", "kind": "parameter", "fqn": "conv.bias", "dtype": "f32",
                       "shape": [K], "init": {"rule": "uniform", "low": -1, "high": 1, "seed": 2}})
    if "bn" in chain:
        for i, (n, lo, hi) in enumerate([("mean", -1, 1), ("var", 0.5, 1.5), ("weight", 0.5, 2),
                                         ("bias", -1, 1)]):
            kind = "buffer" if n in ("mean", "var") else "parameter"
            inputs.append({"name": "bn_" + n, "kind": kind, "fqn": "bn.running_" + n if kind == "buffer" else "bn." + n,
                           "dtype": "f32", "shape": [K],
                           "init": {"rule": "uniform", "low": lo, "high": hi, "seed": 10 + i}})
    if "lastbias" in chain:
        inputs.append({"name": "lb", "kind": "parameter", "fqn": "lb.bias", "dtype": "f32",
                       "shape": [outs[-1]], "init": {"rule": "uniform", "low": -1, "high": 1, "seed": 3}})
    inputs.append({"name": "x", "dtype": "f32", "shape": [N, C] + ins})
    if "sum" in chain:
        inputs.append({"name": "r", "dtype": "f32", "shape": [N, K] + outs})
    nodes = [{"name": "conv", "target": "aten.convolution.default",
              "args": [{"ref": "x"}, {"ref": "w"}, {"ref": "b"} if bias else None,
                       {"ints": [stride] * sp}, {"ints": [pad] * sp}, {"ints": [dil] * sp}, False,
                       {"ints": [0] * sp}, groups],
              "meta": [{"dtype": "f32", "shape": [N, K] + outs}]}]
    chan = {"ints": [1, K] + [1] * sp}
    cur = "conv"

    def add(name, target, args):
        nonlocal cur
        nodes.append({"name": name, "target": target, "args": args})
        cur = name

    ch = lambda v: {"ref": v}
    for i, p in enumerate(chain):
        if p == "relu":
            add(f"relu{i}", "aten.relu.default", [ch(cur)])
        elif p == "sigmoid":
            add(f"sigmoid{i}", "aten.sigmoid.default", [ch(cur)])
        elif p == "clamp":
            add(f"clamp{i}", "aten.clamp.default", [ch(cur), 0.0, 6.0])
        elif p == "scale":
            add(f"scale{i}", "aten.mul.Scalar", [ch(cur), 0.5])
        elif p == "lastbias":
            add(f"lastbias{i}", "aten.add.Tensor", [ch(cur), ch("lb")])
        elif p == "sum":
            add(f"residual{i}", "aten.add.Tensor", [ch(cur), ch("r")])
        elif p == "hardswish":
            x = cur
            add(f"hs_add{i}", "aten.add.Scalar", [ch(x), 3])
            add(f"hs_lo{i}", "aten.clamp.default", [ch(cur), 0])
            add(f"hs_hi{i}", "aten.clamp.default", [ch(cur), None, 6])
            add(f"hs_mul{i}", "aten.mul.Tensor", [ch(x), ch(cur)])
            add(f"hs_div{i}", "aten.div.Scalar", [ch(cur), 6])
        elif p == "hardsigmoid":  # as core ATen writes it: x + 3, clamps to [0, 6], / 6
            add(f"hsig_add{i}", "aten.add.Scalar", [ch(cur), 3])
            add(f"hsig_lo{i}", "aten.clamp.default", [ch(cur), 0])
            add(f"hsig_hi{i}", "aten.clamp.default", [ch(cur), None, 6])
            add(f"hsig_div{i}", "aten.div.Scalar", [ch(cur), 6])
        elif p == "silu":
            x = cur
            add(f"silu_sigmoid{i}", "aten.sigmoid.default", [ch(x)])
            add(f"silu_mul{i}", "aten.mul.Tensor", [ch(x), ch(cur)])
        elif p == "bn":
            x = cur
            add(f"bn_eps{i}", "aten.add.Scalar", [ch("bn_var"), 1e-5])
            add(f"bn_rsqrt{i}", "aten.rsqrt.default", [ch(cur)])
            add(f"bn_inv{i}", "aten.view.default", [ch(cur), chan])
            add(f"bn_m{i}", "aten.view.default", [ch("bn_mean"), chan])
            add(f"bn_sub{i}", "aten.sub.Tensor", [ch(x), ch(f"bn_m{i}")])
            add(f"bn_mul{i}", "aten.mul.Tensor", [ch(cur), ch(f"bn_inv{i}")])
            add(f"bn_w{i}", "aten.view.default", [ch("bn_weight"), chan])
            add(f"bn_mul_w{i}", "aten.mul.Tensor", [ch(f"bn_mul{i}"), ch(cur)])
            add(f"bn_b{i}", "aten.view.default", [ch("bn_bias"), chan])
            add(f"bn_out{i}", "aten.add.Tensor", [ch(f"bn_mul_w{i}"), ch(cur)])
        else:
            sys.exit(f"unknown chain op {p}")
    g = {"format": "fxg", "version": 1, "name": out.rsplit("/", 1)[-1].split(".")[0],
         "inputs": inputs, "nodes": nodes, "outputs": [cur]}
    with open(out, "w") as f:
        json.dump(g, f, indent=1)


main()
