# einsum.fxg and its references, computed here in float64 by summing over every label
# assignment (no torch needed), rounded once to float32: batched matmul, diagonal and trace,
# outer product, ellipsis broadcasting, attention scores, implicit output, a permutation, three
# operands, a dot product and a bilinear form.
# python3 test/graphs/ops/make_refs_einsum.py
import itertools, json, os, struct

here = os.path.dirname(os.path.abspath(__file__))

# (node, equation as fxc reads it, equation for the reference (ellipsis spelled out), operands)
CASES = [
    ("bmm", "bij,bjk->bik", "bij,bjk->bik", ["a", "b"]),
    ("diag", "ii->i", "ii->i", ["c"]),
    ("trace", "ii", "ii->", ["c"]),
    ("outer", "i,j->ij", "i,j->ij", ["u", "v"]),
    ("ellipsis", "...ij,...jk->...ik", "zij,jk->zik", ["a", "d"]),
    ("scores", "bhqd,bhkd->bhqk", "bhqd,bhkd->bhqk", ["q", "k"]),
    ("implicit", "ij,jk", "ij,jk->ik", ["e", "f"]),
    ("permute", "ijk->kji", "ijk->kji", ["a"]),
    ("three", "abc,cd,de->abe", "abc,cd,de->abe", ["a", "g", "h"]),
    ("dot", "i,i->", "i,i->", ["u", "u"]),
    ("bilinear", "bn,anm,bm->ba", "bn,anm,bm->ba", ["x", "w", "y"]),
]
SHAPES = {"a": [2, 3, 4], "b": [2, 4, 5], "c": [4, 4], "u": [3], "v": [5], "d": [4, 2],
          "q": [1, 2, 3, 4], "k": [1, 2, 5, 4], "e": [3, 4], "f": [4, 2], "g": [4, 3], "h": [3, 2],
          "x": [2, 3], "w": [4, 3, 5], "y": [2, 5]}

state = 12345
def rnd():  # a float32 in [-1, 1) from an LCG
    global state
    state = (state * 1103515245 + 12345) % 2**31
    return struct.unpack("<f", struct.pack("<f", state / 2**30 - 1))[0]

def numel(s):
    n = 1
    for x in s: n *= x
    return n

data = {k: [rnd() for _ in range(numel(s))] for k, s in SHAPES.items()}

def at(name, idx):
    s, off = SHAPES[name], 0
    for i, n in zip(idx, s): off = off * n + i
    return data[name][off]

def einsum(eq, names):
    lhs, out = eq.split("->")
    specs = lhs.split(",")
    size = {}
    for sp, n in zip(specs, names):
        for c, d in zip(sp, SHAPES[n]): size[c] = d
    labels = sorted(size)
    res = {}
    for vals in itertools.product(*[range(size[c]) for c in labels]):
        env = dict(zip(labels, vals))
        p = 1.0
        for sp, n in zip(specs, names): p *= at(n, [env[c] for c in sp])
        key = tuple(env[c] for c in out)
        res[key] = res.get(key, 0.0) + p
    shape = [size[c] for c in out]
    flat = [res[key] for key in itertools.product(*[range(n) for n in shape])]
    return shape, flat

def save(path, tensors):
    header, blobs, off = {}, [], 0
    for name, (shape, vals) in tensors.items():
        b = struct.pack("<%df" % len(vals), *vals)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))

inputs = list(SHAPES)
with open(f"{here}/einsum.fxg", "w") as f:
    f.write('{\n  "format": "fxg",\n  "version": 1,\n  "name": "einsum",\n  "inputs": [\n')
    f.write(",\n".join("    " + json.dumps({"name": k, "dtype": "f32", "shape": SHAPES[k]})
                       for k in inputs) + "\n  ],\n  \"nodes\": [\n")
    f.write(",\n".join("    " + json.dumps({"name": n, "target": "aten.einsum.default",
                                            "args": [eq, {"refs": ops}]})
                       for n, eq, _, ops in CASES) + "\n  ],\n")
    f.write('  "outputs": ' + json.dumps([c[0] for c in CASES]) + "\n}\n")
save(f"{here}/einsum.in.safetensors", {k: (SHAPES[k], data[k]) for k in inputs})
save(f"{here}/einsum.ref.safetensors",
     {f"output_{i}": einsum(ref, ops) for i, (_, _, ref, ops) in enumerate(CASES)})
