#!/usr/bin/env python3
"""Writes a BERT-base encoder as <stem>.fxg with its weights in <stem>.safetensors.

The graph of HuggingFace's BertModel (eval, no attention mask, no pooler) as torch.export writes
it with the ATen ops fxc reads: word and position embeddings, embedding layer norm, then
`layers` post-norm encoder layers (self-attention with `heads` heads, erf GELU feed-forward of
4 * hidden). Weights are N(0, 0.02) (layer norms ones and zeros): windows at distinct offsets into
one pool of 2^20 draws (plain Python, so the script needs no numpy or torch and takes a few
seconds; no two weights have equal bytes). The files are as large as the real model's (hidden 768, 12 layers, vocabulary 30522: 436 MB).

  bench/make_bert.py STEM [--layers 12] [--hidden 768] [--heads 12] [--seq 128] [--vocab 30522]
"""
import argparse
import json
import os
import array
import math
import random
import struct


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stem")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=30522)
    ap.add_argument("--batch", type=int, default=1)
    a = ap.parse_args()
    B, T, C, H = a.batch, a.seq, a.hidden, a.heads
    D = C // H
    weights = []  # (fqn, shape, kind) in order of first use
    inputs, nodes, counts = [], [], {}

    def fresh(base):
        n = counts.get(base, 0)
        counts[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def weight(fqn, shape, kind):
        weights.append((fqn, shape, kind))
        name = "p_" + fqn.replace(".", "_")
        inputs.append({"name": name, "kind": "parameter", "fqn": fqn, "dtype": "f32",
                       "shape": shape, "file": os.path.basename(a.stem) + ".safetensors"})
        return name

    def op(target, args, base=None):
        name = fresh(base or target.split(".")[1])
        nodes.append({"name": name, "target": target, "args": args})
        return name

    def ref(n):
        return {"ref": n}

    def linear(x, fqn, fin, fout):
        w = weight(fqn + ".weight", [fout, fin], "normal")
        b = weight(fqn + ".bias", [fout], "zeros")
        return op("aten.linear.default", [ref(x), ref(w), ref(b)])

    def layer_norm(x, fqn):
        w = weight(fqn + ".weight", [C], "ones")
        b = weight(fqn + ".bias", [C], "zeros")
        return op("aten.layer_norm.default", [ref(x), {"ints": [C]}, ref(w), ref(b), 1e-12, False])

    inputs.append({"name": "input_ids", "dtype": "i64", "shape": [B, T]})
    word = weight("embeddings.word_embeddings.weight", [a.vocab, C], "normal")
    pos = weight("embeddings.position_embeddings.weight", [512, C], "normal")
    x = op("aten.embedding.default", [ref(word), ref("input_ids")])
    ar = op("aten.arange.default", [T, {"name": "dtype", "value": {"dtype": "i64"}}])
    ar = op("aten.unsqueeze.default", [ref(ar), 0])
    x = op("aten.add.Tensor", [ref(x), ref(op("aten.embedding.default", [ref(pos), ref(ar)]))])
    x = layer_norm(x, "embeddings.LayerNorm")
    for i in range(a.layers):
        p = f"encoder.layer.{i}"

        def heads(t):
            return op("aten.transpose.int", [ref(op("aten.view.default", [ref(t), {"ints": [B, T, H, D]}])), 1, 2])

        q = heads(linear(x, p + ".attention.self.query", C, C))
        k = heads(linear(x, p + ".attention.self.key", C, C))
        v = heads(linear(x, p + ".attention.self.value", C, C))
        kt = op("aten.transpose.int", [ref(k), -1, -2])
        s = op("aten.mul.Scalar", [ref(op("aten.matmul.default", [ref(q), ref(kt)])), D ** -0.5],
               base="mul")
        s = op("aten.softmax.int", [ref(s), -1])
        y = op("aten.transpose.int", [ref(op("aten.matmul.default", [ref(s), ref(v)])), 1, 2])
        y = op("aten.reshape.default", [ref(y), {"ints": [B, T, C]}])
        y = linear(y, p + ".attention.output.dense", C, C)
        x = layer_norm(op("aten.add.Tensor", [ref(y), ref(x)]), p + ".attention.output.LayerNorm")
        h = op("aten.gelu.default", [ref(linear(x, p + ".intermediate.dense", C, 4 * C))])
        h = linear(h, p + ".output.dense", 4 * C, C)
        x = layer_norm(op("aten.add.Tensor", [ref(h), ref(x)]), p + ".output.LayerNorm")

    header, offset = {}, 0
    for fqn, shape, _ in weights:
        n = math.prod(shape) * 4
        header[fqn] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    rnd = random.Random(0)
    pool = array.array("f", (rnd.gauss(0.0, 0.02) for _ in range(1 << 20)))
    pool = pool.tobytes() * 2  # a window of up to 4 MiB starting anywhere
    with open(a.stem + ".safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb)
        for fqn, shape, kind in weights:
            n = math.prod(shape) * 4
            if kind != "normal":
                f.write(array.array("f", [1.0 if kind == "ones" else 0.0]).tobytes() * (n // 4))
                continue
            start = rnd.randrange(1 << 20) * 4
            while n > 0:
                take = min(n, 1 << 22)
                f.write(pool[start:start + take])
                n -= take
    g = {"format": "fxg", "version": 1, "name": os.path.basename(a.stem), "inputs": inputs,
         "nodes": nodes, "outputs": [x]}
    with open(a.stem + ".fxg", "w") as f:
        json.dump(g, f, indent=1)
    print(f"{a.stem}.fxg: {len(nodes)} nodes, {len(weights)} weights, {offset / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
