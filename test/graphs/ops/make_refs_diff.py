# References for diff.fxg from PyTorch (Debian's python3-torch 1.13 is enough):
# python3 test/graphs/ops/make_refs_diff.py  -> diff.in.safetensors, diff.ref.safetensors
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
g = torch.Generator().manual_seed(0)
x = torch.randn(4, 6, generator=g)
p = torch.randn(2, 6, generator=g)
m = torch.rand(3, 5, generator=g) > 0.5
outs = [torch.diff(x), torch.diff(x, 2, 0, prepend=p), torch.diff(x, 1, -2, append=p),
        torch.diff(m, 1, 1), torch.diff(x, 9)]
save_file({"x": x, "p": p, "m": m}, f"{here}/diff.in.safetensors")
save_file({f"output_{i}": o.contiguous() for i, o in enumerate(outs)}, f"{here}/diff.ref.safetensors")
