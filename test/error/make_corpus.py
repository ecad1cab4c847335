#!/usr/bin/env python3
"""Builds the error corpus: bad .pt2 / .fxg / .safetensors inputs and the diagnostic each must give.

Every case is a file test/error/<case>.<ext> plus <case>.expected holding the exact substring that
`fxc --emit=fx -o /dev/null <case>` must print (it exits with status 1). The .pt2 cases derive
from test/fixtures/mlp.pt2, shrunk to 8x8 weights so that every file stays small.

Run from anywhere: python3 test/error/make_corpus.py
"""
import json
import os
import struct
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")


def read_mlp():
    """The entries of mlp.pt2 (without the sample-inputs pickle), shrunk to 8-wide layers."""
    entries = {}
    with zipfile.ZipFile(os.path.join(FIXTURES, "mlp.pt2")) as z:
        for info in z.infolist():
            if "sample_inputs" in info.filename:
                continue
            entries[info.filename] = z.read(info.filename)
    def shrink(text):
        return (text.replace('{"as_int": 256}', '{"as_int": 8}')
                .replace('{"as_int": 64}', '{"as_int": 4}'))
    entries["mlp/models/model.json"] = shrink(entries["mlp/models/model.json"].decode()).encode()
    cfg = "mlp/data/weights/model_weights_config.json"
    entries[cfg] = shrink(entries[cfg].decode()).encode()
    # 8x8 weights and 8-element biases with recognisable values.
    for i, n in enumerate([64, 8, 64, 8]):
        entries["mlp/data/weights/weight_%d" % i] = struct.pack("<%df" % n, *[0.01 * k for k in range(n)])
    return entries


def write_zip(name, entries):
    with zipfile.ZipFile(os.path.join(HERE, name), "w", zipfile.ZIP_STORED) as z:
        for k, v in entries.items():
            z.writestr(zipfile.ZipInfo(k, date_time=(1980, 1, 1, 0, 0, 0)), v)


def write(name, data):
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(os.path.join(HERE, name), mode) as f:
        f.write(data)


def expect(case, text):
    """<stem>.expected for the input file `case` (test/error.sh pairs them by stem)."""
    stem = case.split(".")[0]
    write(stem + ".expected", text + "\n")


def edit_model(entries, fn):
    e = dict(entries)
    m = json.loads(e["mlp/models/model.json"])
    fn(m)
    e["mlp/models/model.json"] = json.dumps(m).encode()
    return e


def edit_weights_config(entries, fn):
    e = dict(entries)
    key = "mlp/data/weights/model_weights_config.json"
    c = json.loads(e[key])
    fn(c["config"])
    e[key] = json.dumps(c).encode()
    return e


def safetensors(tensors):
    """tensors: list of (name, dtype, shape, bytes)."""
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def fxg(inputs, nodes, outputs, version=1):
    return json.dumps({"format": "fxg", "version": version, "inputs": inputs, "nodes": nodes,
                       "outputs": outputs}, indent=1) + "\n"


def xxh64(data, seed=0):
    """XXH64 (the .fxo checksum; no xxhash module is needed)."""
    P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                          0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)
    M = (1 << 64) - 1
    rotl = lambda x, r: ((x << r) | (x >> (64 - r))) & M
    def rnd(acc, lane):
        return rotl((acc + lane * P2) & M, 31) * P1 & M
    def merge(acc, v):
        return ((acc ^ rnd(0, v)) * P1 + P4) & M
    n, p = len(data), 0
    u64 = lambda at: struct.unpack_from("<Q", data, at)[0]
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        while p + 32 <= n:
            v = [rnd(v[i], u64(p + 8 * i)) for i in range(4)]
            p += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for x in v:
            h = merge(h, x)
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while p + 8 <= n:
        h = (rotl(h ^ rnd(0, u64(p)), 27) * P1 + P4) & M
        p += 8
    if p + 4 <= n:
        h = (rotl(h ^ (struct.unpack_from("<I", data, p)[0] * P1 & M), 23) * P2 + P3) & M
        p += 4
    while p < n:
        h = rotl(h ^ (data[p] * P5 & M), 11) * P1 & M
        p += 1
    h = (h ^ (h >> 33)) * P2 & M
    h = (h ^ (h >> 29)) * P3 & M
    return h ^ (h >> 32)


def fxo(manifest, blobs):
    """An .fxo file (docs/artifact.md, version 4): 64-byte header, the payload as one raw zstd
    block, no weight section."""
    m = json.dumps(manifest).encode()
    payload = struct.pack("<Q", len(m)) + m + blobs
    frame = (b"\x28\xb5\x2f\xfd" + bytes([0xA0]) + struct.pack("<I", len(payload)) +
             struct.pack("<I", 1 | (len(payload) << 3))[:3] + payload)
    head = (b"FXO\0" + struct.pack("<I", 4) + b"0.1.0".ljust(16, b"\0") +
            struct.pack("<QQQQ", len(frame), len(payload), 64 + len(frame), 0))
    return head + struct.pack("<Q", xxh64(head[:56] + frame)) + frame


def main():
    base = read_mlp()
    graph = lambda m: m["graph_module"]["graph"]

    # --- archives -----------------------------------------------------------------------------
    write_zip("truncated.pt2", base)
    path = os.path.join(HERE, "truncated.pt2")
    blob = open(path, "rb").read()
    write("truncated.pt2", blob[: len(blob) // 2])
    expect("truncated.pt2", "truncated.pt2: error: not a zip archive (is the file truncated?)")

    write("notzip.pt2", "this is a text file, not a torch.export archive\n")
    expect("notzip.pt2", "notzip.pt2: error: not a zip archive")

    e = dict(base)
    e["mlp/models/model.json"] = b'{"graph_module": {"graph": {"nodes": [ }'
    write_zip("badjson.pt2", e)
    expect("badjson.pt2", "badjson.pt2: error: malformed JSON in 'mlp/models/model.json'")

    write_zip("wrongshape.pt2", edit_model(base, lambda m: graph(m).__setitem__("nodes", {"relu": 1})))
    expect("wrongshape.pt2", "wrongshape.pt2: error: model.json: graph.nodes is not a list")

    def unknown_op(m):
        graph(m)["nodes"][1]["target"] = "torch.ops.aten.frobnicate.default"
    write_zip("unknown_op.pt2", edit_model(base, unknown_op))
    expect("unknown_op.pt2",
           "unknown_op.pt2: error: node 'relu' (aten.frobnicate.default): unknown op 'aten.frobnicate.default'")

    def undefined(m):
        graph(m)["nodes"][0]["inputs"][0]["arg"]["as_tensor"]["name"] = "nosuchvalue"
    write_zip("undefined.pt2", edit_model(base, undefined))
    expect("undefined.pt2", "undefined.pt2: error: node 'linear' (aten.linear.default): undefined value 'nosuchvalue'")

    e = dict(base)
    e["mlp/data/weights/weight_1"] = e["mlp/data/weights/weight_1"][:16]
    write_zip("short_weight.pt2", e)
    expect("short_weight.pt2",
           "short_weight.pt2: error: entry 'mlp/data/weights/weight_1' has 16 bytes but its tensors need 32")

    write_zip("escape_dotdot.pt2",
              edit_weights_config(base, lambda c: c["fc1.bias"].__setitem__("path_name", "../../etc/passwd")))
    expect("escape_dotdot.pt2", "escape_dotdot.pt2: error: entry name escapes the archive: '../../etc/passwd'")

    write_zip("escape_absolute.pt2",
              edit_weights_config(base, lambda c: c["fc1.bias"].__setitem__("path_name", "/etc/passwd")))
    expect("escape_absolute.pt2", "escape_absolute.pt2: error: entry name escapes the archive: '/etc/passwd'")

    e = dict(base)
    e["../evil.txt"] = b"outside"
    write_zip("escape_entry.pt2", e)
    expect("escape_entry.pt2", "escape_entry.pt2: error: entry name escapes the archive: '../evil.txt'")

    # One flipped byte inside a weight's data: the central directory's CRC-32 no longer matches.
    write_zip("crc.pt2", base)
    path = os.path.join(HERE, "crc.pt2")
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("mlp/data/weights/weight_0")
    blob = bytearray(open(path, "rb").read())
    name_len, extra_len = struct.unpack("<HH", blob[info.header_offset + 26:info.header_offset + 30])
    blob[info.header_offset + 30 + name_len + extra_len + 17] ^= 0x40
    write("crc.pt2", bytes(blob))
    write("crc.args", "--backend=eager --run --seed=1\n")
    expect("crc.pt2", "crc.pt2: error: entry 'mlp/data/weights/weight_0': CRC-32 mismatch (archive is corrupt)")

    def set_weight_sizes(sizes, strides):
        def model(m):
            tv = graph(m)["tensor_values"]["p_fc1_weight"]
            tv["sizes"] = [{"as_int": s} for s in sizes]
            tv["strides"] = [{"as_int": s} for s in strides]
        def config(c):
            tm = c["fc1.weight"]["tensor_meta"]
            tm["sizes"] = [{"as_int": s} for s in sizes]
            tm["strides"] = [{"as_int": s} for s in strides]
        return edit_weights_config(edit_model(base, model), config)
    write_zip("overflow.pt2", set_weight_sizes([1 << 40, 1 << 40], [1 << 40, 1]))
    expect("overflow.pt2", "overflow.pt2: error: size of 'fc1.weight' overflows")

    write_zip("exceeds.pt2", set_weight_sizes([1000000, 8], [8, 1]))
    expect("exceeds.pt2",
           "exceeds.pt2: error: entry 'mlp/data/weights/weight_0' has 256 bytes but its tensors need 32000000")

    # --- .fxg graphs --------------------------------------------------------------------------
    x = {"name": "x", "dtype": "f32", "shape": [8, 64]}
    w = {"name": "w", "dtype": "f32", "shape": [32, 10]}

    write("fxg_badjson.fxg", '{"format": "fxg", "version": 1, "inputs": [\n  {"name": "x",, }\n')
    expect("fxg_badjson.fxg", "fxg_badjson.fxg: error: malformed JSON")

    write("fxg_wrongshape.fxg", fxg({"x": x}, [], []))
    expect("fxg_wrongshape.fxg", "fxg_wrongshape.fxg: error: \"inputs\" must be a list")

    write("version.fxg", fxg([x], [], ["x"], version=7))
    expect("version.fxg", "version.fxg: error: unsupported fxg version 7 (this fxc reads version 1)")

    write("fxg_unknown_op.fxg", fxg([x], [{"name": "f", "target": "aten.frobnicate.default", "args": [{"ref": "x"}]}], ["f"]))
    expect("fxg_unknown_op.fxg", "fxg_unknown_op.fxg: error: node 'f' (aten.frobnicate.default): unknown op 'aten.frobnicate.default'")

    write("fxg_undefined.fxg", fxg([x], [{"name": "r", "target": "aten.relu.default", "args": [{"ref": "y"}]}], ["r"]))
    expect("fxg_undefined.fxg", "fxg_undefined.fxg: error: node 'r' (aten.relu.default): undefined value 'y'")

    write("cycle.fxg", fxg([x], [
        {"name": "a", "target": "aten.add.Tensor", "args": [{"ref": "x"}, {"ref": "b"}]},
        {"name": "b", "target": "aten.relu.default", "args": [{"ref": "a"}]}], ["b"]))
    expect("cycle.fxg", "cycle.fxg: error: node 'a' (aten.add.Tensor): undefined value 'b'")

    write("bad_arg.fxg", fxg([x], [{"name": "s", "target": "aten.sum.dim_IntList",
                                   "args": [{"ref": "x"}, {"ref": "x"}]}], ["s"]))
    expect("bad_arg.fxg", "bad_arg.fxg: error: node 's' (aten.sum.dim_IntList): argument 'dim' expects int[]?, got tensor")

    write("shape_mismatch.fxg", fxg([x, w], [{"name": "mm", "target": "aten.mm.default",
                                            "args": [{"ref": "x"}, {"ref": "w"}]}], ["mm"]))
    expect("shape_mismatch.fxg",
           "shape_mismatch.fxg: error: node 'mm' (aten.mm.default): self is f32[8, 64] but mat2 is f32[32, 10]")

    write("meta_mismatch.fxg", fxg([x], [{"name": "r", "target": "aten.relu.default", "args": [{"ref": "x"}],
                                          "meta": [{"dtype": "f32", "shape": [8, 65]}]}], ["r"]))
    expect("meta_mismatch.fxg",
           "meta_mismatch.fxg: error: node 'r' (aten.relu.default): output 'r' is f32[8, 64] but the file says f32[8, 65]")

    write("bad_init.fxg", fxg([x, {"name": "p", "kind": "parameter", "dtype": "f32", "shape": [64],
                                   "init": {"rule": "gaussian", "seed": 1}}], [], ["x"]))
    expect("bad_init.fxg", "bad_init.fxg: error: input 'p': unknown init rule 'gaussian'")

    write("deep.fxg", '{"format": "fxg", "version": 1, "inputs": ' + "[" * 1000 + "]" * 1000 + "}\n")
    expect("deep.fxg", "deep.fxg: error: malformed JSON: nested deeper than 512 levels")

    write("number_range.fxg", "9e999")
    expect("number_range.fxg", "number_range.fxg: error: malformed JSON: number overflow parsing '9e999'")

    # The same number inside an artifact's embedded graph (an interpreted .fxo).
    write("fxo_number_range.fxo", fxo({
        "format": "fxo", "version": 4, "fxc_version": "0.1.0",
        "models": [{
            "name": "g", "backend": "eager", "device": "cpu", "cuda_arch": "", "mode": "inference",
            "kind": "interpreted", "inputs": [], "outputs": [], "num_user_outputs": 0,
            "tangent_output_index": [], "custom_ops": [],
            "graphs": [{"role": "inference", "kind": "interpreted", "weights": {},
                        "graph": [0, 5]}]}],
        "weights": [], "weight_chunks": {"bytes": 1048576, "xxh3": []}},
        b"9e999"))
    write("fxo_number_range.args", "--run\n")
    expect("fxo_number_range.fxo", "fxo_number_range.fxo: error: malformed JSON: number overflow parsing '9e999'")

    write("corrupt.fxg.zst", b"\x28\xb5\x2f\xfd" + b"\x00garbage that is not a zstd frame")
    expect("corrupt.fxg.zst", "corrupt.fxg.zst: error: corrupt zstd data")

    # --- safetensors behind an .fxg -----------------------------------------------------------
    p = {"name": "p", "kind": "parameter", "fqn": "p", "dtype": "f32", "shape": [4]}
    good = safetensors([("p", "F32", [4], struct.pack("<4f", 1, 2, 3, 4))])

    write("st_header_length_data.safetensors", struct.pack("<Q", 1 << 20) + good[8:])
    write("st_header_length.fxg", fxg([x, dict(p, file="st_header_length_data.safetensors")], [], ["x"]))
    expect("st_header_length.fxg", "st_header_length_data.safetensors: error: safetensors header length 1048576 exceeds the file size")

    write("st_byte_count_data.safetensors", safetensors([("p", "F32", [4], struct.pack("<3f", 1, 2, 3))]))
    write("st_byte_count.fxg", fxg([x, dict(p, file="st_byte_count_data.safetensors")], [], ["x"]))
    expect("st_byte_count.fxg",
           "st_byte_count_data.safetensors: error: tensor 'p': f32[4] needs 16 bytes but data_offsets span 12")

    write("st_dtype_data.safetensors", safetensors([("p", "F8_E4M3", [4], b"\x01\x02\x03\x04")]))
    write("st_dtype.fxg", fxg([x, dict(p, file="st_dtype_data.safetensors")], [], ["x"]))
    expect("st_dtype.fxg", "st_dtype_data.safetensors: error: tensor 'p': unknown dtype 'F8_E4M3'")

    hdr = {"p": {"dtype": "F32", "shape": [4], "data_offsets": [16, 32]}}
    write("st_offsets_data.safetensors", struct.pack("<Q", len(json.dumps(hdr))) + json.dumps(hdr).encode() + bytes(16))
    write("st_offsets.fxg", fxg([x, dict(p, file="st_offsets_data.safetensors")], [], ["x"]))
    expect("st_offsets.fxg",
           "st_offsets_data.safetensors: error: tensor 'p': data_offsets [16, 32] lie outside the 16-byte data section")

    write("st_shape_data.safetensors", good)
    write("st_shape.fxg", fxg([x, dict(p, file="st_shape_data.safetensors", shape=[2, 2])], [], ["x"]))
    expect("st_shape.fxg", "st_shape.fxg: error: input 'p': 'st_shape_data.safetensors' holds f32[4] for 'p' but the graph declares f32[2, 2]")


if __name__ == "__main__":
    main()
