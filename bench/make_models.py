#!/usr/bin/env python3
"""Writes the benchmark graphs as .fxg files: the cases of bench/anchors/seed_models.py (same
shapes, same math, the ATen ops torch.export emits for them) and a ResNet-50 for compile-time
measurements. Weights are init rules (nn.Linear/nn.Conv2d's kaiming_uniform, ones/zeros for the
norms), so the files stay a few kilobytes.

  bench/make_models.py [--size goal|small] [--dtype f32,bf16] [--only mlp,block,...] [-o bench/models]

Writes <out>/<case>.<dtype>.fxg for mlp, mlp_train (the same graph as mlp; run it with
--mode=train), block, convnet and norms, and <out>/resnet50.fxg (f32 only). --size=small gives
the same graphs at sizes the CPU runs in a second (for tests); goal is seed_models.py's sizes.

One departure from a literal export of seed_models.Block: the causal mask
torch.ones(T, T, dtype=bool).triu(1) is built as arange(T)[None, :] > arange(T)[:, None]
(the same mask; fxc has no aten.ones/aten.triu), and the attention scale is aten.mul.Scalar
where export writes aten.mul.Tensor with a Python float (fxc's schema wants a tensor there).
"""
import argparse
import json
import os

SIZES = {
    "goal": {"mlp": (1024, 1024), "block": (8, 512, 768, 12), "convnet": (32, 64),
             "norms": (8192, 4096), "resnet50": (1, 224)},
    "small": {"mlp": (64, 256), "block": (2, 16, 128, 4), "convnet": (4, 16),
              "norms": (32, 512), "resnet50": (1, 32)},
}


class GraphBuilder:
    """Collects inputs and nodes; node names follow torch.export's (linear, linear_1, ...)."""

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype
        self.inputs, self.nodes, self.counts = [], [], {}
        self.seed = 0

    def fresh(self, base):
        n = self.counts.get(base, 0)
        self.counts[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def user_input(self, name, shape, dtype=None):
        self.inputs.append({"name": name, "dtype": dtype or self.dtype, "shape": list(shape)})
        return name

    def weight(self, fqn, shape, init, kind="parameter", dtype=None):
        name = ("p_" if kind == "parameter" else "b_") + fqn.replace(".", "_")
        init = dict(init)
        if init["rule"] in ("kaiming_uniform", "uniform", "normal"):
            self.seed += 1
            init["seed"] = self.seed
        self.inputs.append({"name": name, "kind": kind, "fqn": fqn, "dtype": dtype or self.dtype,
                            "shape": list(shape), "init": init})
        return name

    def op(self, target, args, base=None, outputs=None):
        name = self.fresh(base or target.split(".")[1])
        node = {"name": name, "target": target, "args": args}
        if outputs:
            node["outputs"] = [self.fresh("getitem") for _ in range(outputs)]
        self.nodes.append(node)
        return node.get("outputs", name)

    def write(self, path, outputs):
        g = {"format": "fxg", "version": 1, "name": self.name, "inputs": self.inputs,
             "nodes": self.nodes, "outputs": outputs}
        with open(path, "w") as f:
            f.write("{\n")
            f.write(f' "format": "fxg", "version": 1, "name": {json.dumps(self.name)},\n')
            f.write(' "inputs": [\n' + ",\n".join("  " + json.dumps(i) for i in g["inputs"]))
            f.write("\n ],\n")
            f.write(' "nodes": [\n' + ",\n".join("  " + json.dumps(n) for n in g["nodes"]))
            f.write("\n ],\n")
            f.write(f' "outputs": {json.dumps(outputs)}\n}}\n')


def ref(n):
    return {"ref": n}


def ints(*v):
    return {"ints": list(v)}


def linear(g, x, fqn, fin, fout):
    w = g.weight(fqn + ".weight", [fout, fin], {"rule": "kaiming_uniform"})
    b = g.weight(fqn + ".bias", [fout], {"rule": "kaiming_uniform", "fan_in": fin})
    return g.op("aten.linear.default", [ref(x), ref(w), ref(b)])


def layer_norm(g, x, fqn, d):
    w = g.weight(fqn + ".weight", [d], {"rule": "ones"})
    b = g.weight(fqn + ".bias", [d], {"rule": "zeros"})
    return g.op("aten.layer_norm.default", [ref(x), ints(d), ref(w), ref(b), 1e-05, False])


def conv2d(g, x, fqn, cin, cout, k, stride=1, pad=0, bias=True):
    w = g.weight(fqn + ".weight", [cout, cin, k, k], {"rule": "kaiming_uniform"})
    b = None
    if bias:
        b = ref(g.weight(fqn + ".bias", [cout], {"rule": "kaiming_uniform", "fan_in": cin * k * k}))
    return g.op("aten.conv2d.default", [ref(x), ref(w), b, ints(stride, stride), ints(pad, pad)])


def batch_norm(g, x, fqn, c):
    w = g.weight(fqn + ".weight", [c], {"rule": "ones"})
    b = g.weight(fqn + ".bias", [c], {"rule": "zeros"})
    m = g.weight(fqn + ".running_mean", [c], {"rule": "zeros"}, kind="buffer")
    v = g.weight(fqn + ".running_var", [c], {"rule": "ones"}, kind="buffer")
    g.weight(fqn + ".num_batches_tracked", [], {"rule": "zeros"}, kind="buffer", dtype="i64")
    return g.op("aten.batch_norm.default",
                [ref(x), ref(w), ref(b), ref(m), ref(v), False, 0.1, 1e-05, False])


def relu(g, x):
    return g.op("aten.relu.default", [ref(x)])


def mlp(g, n, d):
    """seed_models.MLP: relu(fc2(relu(fc1(x)) ** 2)) ** 2."""
    x = g.user_input("x", [n, d])
    h = g.op("aten.pow.Tensor_Scalar", [ref(relu(g, linear(g, x, "fc1", d, d))), 2])
    return [g.op("aten.pow.Tensor_Scalar", [ref(relu(g, linear(g, h, "fc2", d, d))), 2])]


def block(g, B, T, C, H):
    """seed_models.Block: pre-norm GPT block with explicit causal softmax attention."""
    D = C // H
    x = g.user_input("x", [B, T, C])
    qkv = linear(g, layer_norm(g, x, "ln1", C), "qkv", C, 3 * C)
    parts = g.op("aten.split.Tensor", [ref(qkv), C, 2], outputs=3)
    q, k, v = (g.op("aten.transpose.int", [ref(g.op("aten.view.default", [ref(p), ints(B, T, H, D)])), 1, 2])
               for p in parts)
    kt = g.op("aten.transpose.int", [ref(k), -2, -1])
    att = g.op("aten.mul.Scalar", [ref(g.op("aten.matmul.default", [ref(q), ref(kt)])), D ** -0.5],
               base="mul")
    ar = g.op("aten.arange.default", [T, {"name": "dtype", "value": {"dtype": "i64"}}])
    mask = g.op("aten.gt.Tensor", [ref(g.op("aten.unsqueeze.default", [ref(ar), 0])),
                                   ref(g.op("aten.unsqueeze.default", [ref(ar), 1]))])
    att = g.op("aten.masked_fill.Scalar", [ref(att), ref(mask), {"float": "-inf"}])
    att = g.op("aten.softmax.int", [ref(att), -1])
    y = g.op("aten.transpose.int", [ref(g.op("aten.matmul.default", [ref(att), ref(v)])), 1, 2])
    y = g.op("aten.reshape.default", [ref(y), ints(B, T, C)])
    x = g.op("aten.add.Tensor", [ref(x), ref(linear(g, y, "proj", C, C))])
    h = linear(g, layer_norm(g, x, "ln2", C), "fc", C, 4 * C)
    h = g.op("aten.gelu.default", [ref(h), {"name": "approximate", "value": "tanh"}])
    return [g.op("aten.add.Tensor", [ref(x), ref(linear(g, h, "out", 4 * C, C))])]


def convnet(g, N, S):
    """seed_models.ConvNet in eval mode."""
    x = g.user_input("x", [N, 3, S, S])
    h = relu(g, batch_norm(g, conv2d(g, x, "c1", 3, 32, 3, pad=1), "b1", 32))
    h = g.op("aten.max_pool2d.default", [ref(h), ints(2, 2)])
    h = relu(g, batch_norm(g, conv2d(g, h, "c2", 32, 64, 3, pad=1), "b2", 64))
    h = g.op("aten.adaptive_avg_pool2d.default", [ref(h), ints(1, 1)])
    h = g.op("aten.flatten.using_ints", [ref(h), 1], base="flatten")
    return [linear(g, h, "fc", 64, 10)]


def norms(g, R, D):
    """seed_models.Norms: softmax(gelu(layer_norm(x, w, b)) + x, -1)."""
    x, w, b = g.user_input("x", [R, D]), g.user_input("w", [D]), g.user_input("b", [D])
    h = g.op("aten.layer_norm.default", [ref(x), ints(D), ref(w), ref(b), 1e-05, False])
    h = g.op("aten.add.Tensor", [ref(g.op("aten.gelu.default", [ref(h)])), ref(x)])
    return [g.op("aten.softmax.int", [ref(h), -1])]


def resnet50(g, N, S):
    """torchvision's resnet50 (eval): stem, bottleneck stages [3, 4, 6, 3], pool, fc."""
    x = g.user_input("x", [N, 3, S, S])
    h = relu(g, batch_norm(g, conv2d(g, x, "conv1", 3, 64, 7, 2, 3, False), "bn1", 64))
    h = g.op("aten.max_pool2d.default", [ref(h), ints(3, 3), ints(2, 2), ints(1, 1)])
    cin = 64
    for stage, (blocks, width) in enumerate([(3, 64), (4, 128), (6, 256), (3, 512)]):
        for i in range(blocks):
            p = f"layer{stage + 1}.{i}"
            stride = 2 if i == 0 and stage > 0 else 1
            o = relu(g, batch_norm(g, conv2d(g, h, p + ".conv1", cin, width, 1, bias=False),
                                   p + ".bn1", width))
            o = relu(g, batch_norm(g, conv2d(g, o, p + ".conv2", width, width, 3, stride, 1, False),
                                   p + ".bn2", width))
            o = batch_norm(g, conv2d(g, o, p + ".conv3", width, 4 * width, 1, bias=False),
                           p + ".bn3", 4 * width)
            short = h
            if i == 0:
                short = batch_norm(g, conv2d(g, h, p + ".downsample.0", cin, 4 * width, 1, stride,
                                             bias=False), p + ".downsample.1", 4 * width)
            h = relu(g, g.op("aten.add.Tensor", [ref(o), ref(short)]))
            cin = 4 * width
    h = g.op("aten.adaptive_avg_pool2d.default", [ref(h), ints(1, 1)])
    h = g.op("aten.flatten.using_ints", [ref(h), 1], base="flatten")
    return [linear(g, h, "fc", 2048, 1000)]


CASES = {"mlp": mlp, "mlp_train": mlp, "block": block, "convnet": convnet, "norms": norms}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=["goal", "small"], default="goal")
    ap.add_argument("--dtype", default="f32,bf16")
    ap.add_argument("--only", default="", help="comma-separated cases (default: all + resnet50)")
    ap.add_argument("-o", "--out", default=os.path.join(os.path.dirname(__file__), "models"))
    a = ap.parse_args()
    only = set(a.only.split(",")) - {""}
    os.makedirs(a.out, exist_ok=True)
    sizes = SIZES[a.size]
    for case, fn in CASES.items():
        if only and case not in only:
            continue
        for dt in a.dtype.split(","):
            g = GraphBuilder(case, dt)
            outs = fn(g, *sizes[case.replace("_train", "")])
            path = os.path.join(a.out, f"{case}.{dt}.fxg")
            g.write(path, outs)
            print(path, len(g.nodes), "nodes")
    if not only or "resnet50" in only:
        g = GraphBuilder("resnet50", "f32")
        outs = resnet50(g, *sizes["resnet50"])
        path = os.path.join(a.out, "resnet50.fxg")
        g.write(path, outs)
        print(path, len(g.nodes), "nodes,", len(g.inputs), "inputs")


if __name__ == "__main__":
    main()
