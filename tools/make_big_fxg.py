#!/usr/bin/env python3
"""Writes a synthetic large model for artifact tests: <out>.fxg and <out>.safetensors.

`layers` Linear layers alternating [width, hidden] and [hidden, width] (f32, no bias), each
followed by relu; the last two layers' weights repeat the first two's bytes under other names
(content deduplication). Usage: make_big_fxg.py OUT_STEM LAYERS WIDTH HIDDEN [BATCH]
(16 2048 8192 gives 1 GiB of weights, 14 distinct). Without numpy the weights come from Python's
random module (other values, the same structure; slow beyond test sizes)."""
import array, json, os, random, struct, sys

try:
    import numpy as np
except ImportError:
    np = None


def weight_bytes(seed, s):
    """Layer `seed`'s [rows, cols] weight, N(0, 1/cols), as little-endian f32 bytes."""
    if np is not None:
        w = np.random.default_rng(seed).standard_normal(s, dtype=np.float32) * (1.0 / s[1] ** 0.5)
        return w.tobytes()
    r = random.Random(seed)
    sd = 1.0 / s[1] ** 0.5
    return array.array("f", (r.gauss(0.0, sd) for _ in range(s[0] * s[1]))).tobytes()


stem, layers, width, hidden = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
batch = int(sys.argv[5]) if len(sys.argv) > 5 else 4
shapes = [[hidden, width] if i % 2 == 0 else [width, hidden] for i in range(layers)]
header, offset = {}, 0
for i, s in enumerate(shapes):
    n = s[0] * s[1] * 4
    header[f"l{i}.weight"] = {"dtype": "F32", "shape": s, "data_offsets": [offset, offset + n]}
    offset += n
hb = json.dumps(header, separators=(",", ":")).encode()
hb += b" " * ((8 - len(hb) % 8) % 8)
with open(stem + ".safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(hb)) + hb)
    for i, s in enumerate(shapes):
        seed = i if i < layers - 2 or layers < 4 else i - (layers - 2)
        f.write(weight_bytes(seed, s))
inputs = [{"name": f"p_l{i}_weight", "kind": "parameter", "fqn": f"l{i}.weight", "dtype": "f32",
           "shape": s, "file": os.path.basename(stem) + ".safetensors"} for i, s in enumerate(shapes)]
inputs.append({"name": "x", "dtype": "f32", "shape": [batch, width]})
nodes, prev = [], "x"
for i, s in enumerate(shapes):
    nodes.append({"name": f"linear_{i}", "target": "aten.linear.default",
                  "args": [{"ref": prev}, {"ref": f"p_l{i}_weight"}]})
    nodes.append({"name": f"relu_{i}", "target": "aten.relu.default", "args": [{"ref": f"linear_{i}"}]})
    prev = f"relu_{i}"
g = {"format": "fxg", "version": 1, "name": os.path.basename(stem), "inputs": inputs,
     "nodes": nodes, "outputs": [prev]}
with open(stem + ".fxg", "w") as f:
    json.dump(g, f, indent=1)
