#!/usr/bin/env python3
"""Torch references for the op-family graphs of test/graphs/ops/ that ops_e2e_b.sh checks
(pooling, resampling, padding, views/copies, factories, pool and norm backwards) and that
ops_e2e.sh checks (scans, sorting, scatters, roll, as_strided, index.Tensor).

For each graph named on the command line (default: the graphs listed in GRAPHS) this runs the
same nodes through torch.ops.aten, in order, from inputs drawn here with a fixed seed, and writes
<name>.in.safetensors (the inputs, by graph input name) and <name>.ref.safetensors (the outputs,
output_0..) beside the graph. The graph file is the single description of the computation, so
the reference cannot drift from what fxc runs. Usage: python3 make_refs_b.py [graph.fxg ...]
"""
import json
import os
import struct
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
GRAPHS = ["pool_avg", "resample", "pad_mode", "view_copy", "factory_like", "pool_nd", "pool_backward",
          "scan", "scan_sort_more", "scatter_more", "index_view", "norm_backward", "grid_sample", "pool_max_cdist", "im2col_pdist",
          "resample_nd"]

DTYPES = {
    "f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
    "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8,
    "u8": torch.uint8, "b8": torch.bool,
}
ST_NAMES = {
    torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}
FORMATS = {"contiguous_format": torch.contiguous_format, "channels_last": torch.channels_last,
           "channels_last_3d": torch.channels_last_3d, "preserve_format": torch.preserve_format}


def decode(v, env):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        (k, x), = v.items()
        if k == "ref":
            return env[x]
        if k == "refs":
            return [None if r is None else env[r] for r in x]
        if k in ("ints", "bools"):
            return list(x)
        if k == "floats":
            return [float(f) for f in x]
        if k == "float":
            return float(x)
        if k == "dtype":
            return DTYPES[x]
        if k == "device":
            return torch.device(x)
        if k == "memory_format":
            return FORMATS[x]
        if k == "layout":
            return torch.strided
    raise ValueError("cannot decode argument %r" % (v,))


def save(path, tensors):
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        data = bytes(t.reshape(-1).view(torch.uint8).tolist()) if t.numel() else b""
        header[name] = {"dtype": ST_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, sort_keys=True).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def run(path):
    g = json.load(open(path))
    gen = torch.Generator().manual_seed(0)
    env, inputs = {}, {}
    for i in g["inputs"]:
        dt, shape = DTYPES[i["dtype"]], i["shape"]
        if dt.is_floating_point:
            t = torch.randn(shape, generator=gen, dtype=torch.float64).to(dt)
        elif dt == torch.bool:
            t = torch.randint(0, 2, shape, generator=gen).bool()
        else:
            t = torch.randint(-5, 10, shape, generator=gen).to(dt)
        env[i["name"]] = inputs[i["name"]] = t
    for n in g["nodes"]:
        _, name, overload = n["target"].split(".")
        op = getattr(getattr(torch.ops.aten, name), overload)
        pos, kw = [], {}
        for a in n["args"]:
            if isinstance(a, dict) and set(a) == {"name", "value"}:
                kw[a["name"]] = decode(a["value"], env)
            else:
                pos.append(decode(a, env))
        r = op(*pos, **kw)
        outs = n.get("outputs", [n["name"]])
        if isinstance(r, (tuple, list)):
            for o, v in zip(outs, r):
                env[o] = v
        else:
            env[outs[0]] = r
    stem = path[:-len(".fxg")]
    save(stem + ".in.safetensors", inputs)
    save(stem + ".ref.safetensors", {"output_%d" % k: env[o] for k, o in enumerate(g["outputs"])})
    print("wrote", os.path.basename(stem) + ".{in,ref}.safetensors")


if __name__ == "__main__":
    paths = sys.argv[1:] or [os.path.join(HERE, n + ".fxg") for n in GRAPHS]
    for p in paths:
        run(p)
