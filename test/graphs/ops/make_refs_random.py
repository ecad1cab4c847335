# Inputs for random.fxg (python3 test/graphs/ops/make_refs_random.py -> random.in.safetensors).
# There is no random.ref.safetensors: fxc's random ops draw from Philox keyed by --seed and the
# node's name (docs/random.md), not from PyTorch's generator, so test/random_ops.sh checks their
# distributions and that eager and inductor agree bit for bit instead.
import json, os, struct, torch

def save_file(tensors, path): # the safetensors format, without the safetensors package
    codes = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.bool: "BOOL"}
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        b = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": codes[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
here = os.path.dirname(os.path.abspath(__file__))
gen = torch.Generator().manual_seed(0)
x = torch.randn(64, 32, generator=gen)
p = torch.rand(16, 16, generator=gen)
g = torch.randn(64, 32, generator=gen)
save_file({"x": x, "p": p, "g": g}, f"{here}/random.in.safetensors")
