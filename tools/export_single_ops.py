#!/usr/bin/env python3
"""Exports one small .pt2 archive per OpInfo sample, as torch.export writes them: the default
export (NAME.pt2) and the core ATen one (NAME.core.pt2), with NAME.io.safetensors holding the
inputs (input_0..) and PyTorch's float outputs (output_0..), like ../shared/fixtures.

Run on a machine with torch 2.x (the GPU machine): it walks PyTorch's own OpInfo database, so
every op family PyTorch tests gets an archive of what the exporter really writes. Also writes
core_ops.txt (every overload tagged core, with its schema) and manifest.json (per sample: the
ops in each graph, or why it was skipped). Usage: export_single_ops.py OUT_DIR [SAMPLES_PER_OP]
"""
import json
import multiprocessing as mp
import os
import re
import signal
import struct
import sys

os.environ["CUDA_VISIBLE_DEVICES"] = ""  # CPU references; forked workers must not touch CUDA
import torch  # noqa: E402

try:  # torch.testing._internal imports expecttest, which a plain torch install may lack
    import expecttest  # noqa: F401
except ImportError:
    import types
    import unittest
    sys.modules["expecttest"] = types.SimpleNamespace(TestCase=unittest.TestCase)

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
          torch.uint8: "U8", torch.bool: "BOOL"}


def save_safetensors(tensors, path):
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        b = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, sort_keys=True).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def core_ops():
    rows = []
    for name in sorted(dir(torch.ops.aten)):
        try:
            packet = getattr(torch.ops.aten, name)
            overloads = packet.overloads()
        except Exception:
            continue
        for ov in overloads:
            op = getattr(packet, ov)
            if torch.Tag.core in op.tags:
                rows.append("aten.%s.%s\t%s" % (name, ov, op._schema))
    return rows


class Call(torch.nn.Module):
    def __init__(self, fn, spec, leaves, slots):
        super().__init__()
        self.fn, self.spec, self.leaves, self.slots = fn, spec, leaves, slots

    def forward(self, *tensors):
        from torch.utils._pytree import tree_unflatten
        leaves = list(self.leaves)
        for slot, t in zip(self.slots, tensors):
            leaves[slot] = t
        inp, args, kwargs = tree_unflatten(leaves, self.spec)
        out = self.fn(inp, *args, **kwargs)
        # torch.return_types (sort, topk, qr, ...) have no serialization name: plain tuples do
        return tuple(out) if isinstance(out, tuple) and type(out) is not tuple else out


def graph_ops(ep):
    return sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"})


def timeout(signum, frame):
    raise TimeoutError("timed out")


def export_sample(info, s, out_dir, name, row):
    from torch.utils._pytree import tree_flatten
    leaves, spec = tree_flatten((s.input, tuple(s.args), dict(s.kwargs)))
    slots = [i for i, l in enumerate(leaves) if isinstance(l, torch.Tensor)]
    tensors = [leaves[i] for i in slots]
    if not tensors or sum(t.numel() for t in tensors) > 200000:
        raise ValueError("no tensor input or too large")
    if any(t.dtype not in DTYPES for t in tensors):
        raise ValueError("input dtype")
    mod = Call(info.op, spec, leaves, slots)
    torch.manual_seed(0)
    out1 = mod(*tensors)
    torch.manual_seed(0)
    out2 = mod(*tensors)
    out3 = mod(*tensors)  # without reseeding: a random op draws other values
    outs, _ = tree_flatten(out1)
    outs2, _ = tree_flatten(out2)
    outs3, _ = tree_flatten(out3)
    if not outs or not all(isinstance(o, torch.Tensor) for o in outs):
        raise ValueError("a non-tensor output")
    if any(o.dtype not in DTYPES for o in outs):
        raise ValueError("output dtype")
    if not all(torch.equal(a, b) or (a.is_floating_point() and torch.allclose(a, b, equal_nan=True))
               for a, b in zip(outs, outs2)):
        raise ValueError("nondeterministic")
    row["random"] = not all(isinstance(b, torch.Tensor) and a.shape == b.shape and
                            torch.equal(a, b) for a, b in zip(outs, outs3))
    ep = torch.export.export(mod, tuple(tensors), strict=False)
    core = ep.run_decompositions()
    row["ops"] = graph_ops(ep)
    row["core_ops"] = graph_ops(core)
    io = {"input_%d" % i: t for i, t in enumerate(tensors)}
    io.update({"output_%d" % i: o for i, o in enumerate(outs)})
    save_safetensors(io, os.path.join(out_dir, name + ".io.safetensors"))  # first: it can fail
    torch.export.save(ep, os.path.join(out_dir, name + ".pt2"))
    torch.export.save(core, os.path.join(out_dir, name + ".core.pt2"))


def export_op(job):
    index, out_dir, per_op = job
    torch.set_num_threads(1)
    from torch.testing._internal.common_methods_invocations import op_db
    info = op_db[index]
    base = re.sub(r"[^A-Za-z0-9_]", "_", info.name) + \
        ("-" + re.sub(r"[^A-Za-z0-9_]", "_", info.variant_test_name) if info.variant_test_name else "")
    rows = []
    supported = info.supported_dtypes("cpu")
    first = [d for d in (torch.float32, torch.int64, torch.bool) if d in supported][:1]
    if not first:
        return [{"name": base, "skip": "no float32/int64/bool support"}]
    # float32 samples (or the op's first supported dtype), and one int64 sample where the op
    # takes integers: PyTorch's integer rules (division, remainder, shifts) differ from floats'.
    plan = [(first[0], per_op, "")]
    if first[0] != torch.int64 and torch.int64 in supported:
        plan.append((torch.int64, 1, "i64."))
    signal.signal(signal.SIGALRM, timeout)
    for dtype, quota, tag in plan:
        try:
            signal.alarm(30)
            samples = list(info.sample_inputs("cpu", dtype, requires_grad=False))
            signal.alarm(0)
        except Exception as e:
            signal.alarm(0)
            rows.append({"name": base + "." + tag, "skip": "samples: %s" % str(e)[:200]})
            continue
        kept = 0
        for si, s in enumerate(samples[:3 * quota]):
            if kept >= quota:
                break
            name = "%s.%s%d" % (base, tag, si)
            row = {"name": name, "op": info.name, "variant": info.variant_test_name}
            try:
                signal.alarm(60)
                export_sample(info, s, out_dir, name, row)
                kept += 1
            except Exception as e:
                row["skip"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")
            finally:
                signal.alarm(0)
            rows.append(row)
    return rows


def main():
    out_dir = sys.argv[1]
    per_op = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "core_ops.txt"), "w") as f:
        f.write("\n".join(core_ops()) + "\n")
    from torch.testing._internal.common_methods_invocations import op_db
    jobs = [(i, out_dir, per_op) for i in range(len(op_db))]
    rows = []
    with mp.get_context("fork").Pool(max(1, (os.cpu_count() or 2) - 2), maxtasksperchild=20) as pool:
        for r in pool.imap_unordered(export_op, jobs):
            rows.extend(r)
            with open(os.path.join(out_dir, "manifest.json"), "w") as f:
                json.dump(sorted(rows, key=lambda r: r["name"]), f, indent=1)


if __name__ == "__main__":
    main()
