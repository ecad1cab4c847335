#!/usr/bin/env python3
"""Regenerable weights and inputs for the model zoo (tools/export_zoo.py).

  python3 tools/zoo_weights.py restore DIR     every DIR/NAME[.core].pt2 with a DIR/NAME.weights.json
                                               gets its zeroed entries written back (stored, not
                                               deflated, as torch.export writes them), and
                                               DIR/NAME.in.safetensors gets the inputs (input_<i>)
                                               and DIR/NAME.io.safetensors the inputs and the
                                               outputs of DIR/NAME.out.safetensors (output_<i>)

NAME.weights.json: {"archives": {"pt2": {zip entry: info}, "core.pt2": {...}}, "inputs": [info]},
where a weight's info is {seed, n, mean, std} and an input's {seed, shape, dtype, mean, std} for
float32 or {seed, shape, dtype: "int64", high} for token ids in [0, high).

The values are a counter-based hash (splitmix64 of the element index and a seed), mapped to a
uniform distribution with a given mean and standard deviation, in float32. Integer arithmetic
only, so numpy 1.x and 2.x give the same bits on every machine.
"""
import json, os, struct, sys, zipfile

import numpy as np

MIN_ELEMENTS = 4096  # smaller tensors (norm scales, biases, running stats) stay in the archive

_U = np.uint64


def generate(seed, n, mean, std):
    x = np.arange(n, dtype=np.uint64) * _U(0x9E3779B97F4A7C15) + _U((seed * 0xD1B54A32D192ED03) & 0xFFFFFFFFFFFFFFFF)
    x ^= x >> _U(30)
    x *= _U(0xBF58476D1CE4E5B9)
    x ^= x >> _U(27)
    x *= _U(0x94D049BB133111EB)
    x ^= x >> _U(31)
    u = (x >> _U(40)).astype(np.float64) * (1.0 / (1 << 24))  # [0, 1)
    half = std * 3.0 ** 0.5  # a uniform on [-h, h] has standard deviation h / sqrt(3)
    return ((2.0 * u - 1.0) * half + mean).astype(np.float32)


def generate_ints(seed, n, high):
    """n int64 values in [0, high): the same hash as generate(), reduced modulo high."""
    x = np.arange(n, dtype=np.uint64) * _U(0x9E3779B97F4A7C15) + _U((seed * 0xD1B54A32D192ED03) & 0xFFFFFFFFFFFFFFFF)
    x ^= x >> _U(31)
    x *= _U(0xBF58476D1CE4E5B9)
    x ^= x >> _U(29)
    return (x % _U(high)).astype(np.int64)


def generate_input(info):
    """The array an input's info describes (shape, dtype, and its seed)."""
    n = int(np.prod(info["shape"], dtype=np.int64))
    if info["dtype"] == "int64":
        return generate_ints(info["seed"], n, info["high"]).reshape(info["shape"])
    return generate(info["seed"], n, info["mean"], info["std"]).reshape(info["shape"])


def write_safetensors(path, arrays):
    """A safetensors file of numpy arrays (name -> array), in the order given."""
    names = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64", np.dtype(np.float16): "F16",
             np.dtype(np.int64): "I64", np.dtype(np.int32): "I32", np.dtype(np.int8): "I8",
             np.dtype(np.uint8): "U8", np.dtype(np.bool_): "BOOL"}
    header, blobs, off = {}, [], 0
    for k, a in arrays.items():
        b = np.ascontiguousarray(a).tobytes()
        header[k] = {"dtype": names[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """name -> numpy array of a safetensors file (F32, I64, BOOL, ... as numpy has them)."""
    types = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
             "I32": np.int32, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(data[a:b], dtype=types[v["dtype"]]).reshape(v["shape"])
    return out


def generate_bytes(info):
    return generate(info["seed"], info["n"], info["mean"], info["std"]).tobytes()


def restore(path, entries):
    tmp = path + ".tmp"
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename in entries:
                data = generate_bytes(entries[info.filename])
                assert len(data) == info.file_size, info.filename
            zi = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            # Each entry's data on a 64-byte boundary, padded as PyTorch's own writer pads it
            # (an extra field 'FB' in the local header), so readers may use it in place.
            start = zout.fp.tell() + 30 + len(info.filename.encode()) + 4
            pad = -start % 64
            zi.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
            zout.writestr(zi, data)
    os.replace(tmp, path)


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "restore":
        sys.exit(__doc__)
    d = sys.argv[2]
    for f in sorted(os.listdir(d)):
        if not f.endswith(".weights.json"):
            continue
        name = f[: -len(".weights.json")]
        with open(os.path.join(d, f)) as fh:
            meta = json.load(fh)
        for suffix, entries in meta["archives"].items():
            p = os.path.join(d, f"{name}.{suffix}")
            if os.path.exists(p):
                restore(p, entries)
                print(f"{p}: {len(entries)} entries restored")
        ins = {f"input_{i}": generate_input(info) for i, info in enumerate(meta["inputs"])}
        write_safetensors(os.path.join(d, f"{name}.in.safetensors"), ins)
        out = os.path.join(d, f"{name}.out.safetensors")
        if os.path.exists(out):
            ins.update(read_safetensors(out))
            write_safetensors(os.path.join(d, f"{name}.io.safetensors"), ins)


if __name__ == "__main__":
    main()
