# Writing reference tensors for the op graphs' make_refs_*.py scripts.
import json, struct, torch


def save_file(tensors, path): # the safetensors format, without the safetensors package
    codes = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.int32: "I32",
             torch.bool: "BOOL"}
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        b = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": codes[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
