#!/usr/bin/env python3
"""Writes a synthetic .fxg chain of N pointwise nodes (tanh/mul/add/sigmoid) with one relu in
the middle: the graph the minifier is measured on. Usage: gen_chain.py N out.fxg"""
import json, sys

n, out = int(sys.argv[1]), sys.argv[2]
ops = ["aten.tanh.default", "aten.mul.Scalar", "aten.add.Scalar", "aten.sigmoid.default"]
nodes, prev = [], "x"
for i in range(n):
    name = f"n{i}"
    if i == n // 2:
        nodes.append({"name": name, "target": "aten.relu.default", "args": [{"ref": prev}]})
    else:
        op = ops[i % len(ops)]
        args = [{"ref": prev}] + ([0.5] if op.endswith(".Scalar") else [])
        nodes.append({"name": name, "target": op, "args": args})
    prev = name
json.dump({"format": "fxg", "version": 1, "name": "chain",
           "inputs": [{"name": "x", "dtype": "f32", "shape": [64, 64]}],
           "nodes": nodes, "outputs": [prev]}, open(out, "w"), indent=1)
