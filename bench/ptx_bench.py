# Checks and times fxc's PTX kernels on the GPU without the fxc binary there.
#
# Each PTX file (written by `fxc --device=cuda --emit=ptx` on any machine) holds the one fused
# kernel of a case, launched with GRID blocks of BLOCK threads; its parameters are the case's
# inputs and output (device pointers), then the row count of its iteration space (ROWS; a
# kernel of R rows per block is launched with GRID = ceil(ROWS / R)).
# Cases, x of ROWS x COLS:
#   norms    softmax(gelu(layer_norm(x, w, b)) + x, dim=-1)   (x, w, b, out)
#   softmax  softmax(x, -1)                                     (x, out)
#   sum      x.sum(-1)                                          (x, out)
#   argmax   x.argmax(-1)                                       (x, out)
#   pointwise relu(x) * x                                       (x, out)
# Every variant is checked against PyTorch (float64) and timed like triton's do_bench (L2
# flushed before each run, CUDA events, median); bytes = one read of x and one write of out.
# The copy reference is a device-to-device copy of x, so "% copy" is the share of copy bandwidth.
# ulp_err: the largest error in ulps of the output dtype at the reference value (eager too).
#
# Usage: python3 ptx_bench.py [--inductor] CASE:DTYPE:ROWS:COLS:FILE.ptx:GRID:BLOCK[:LABEL] ...
import argparse
import json

import cupy as cp
import torch
import torch.nn.functional as F

DT = {"f32": torch.float32, "bf16": torch.bfloat16}


def time_ms(fn, flush, reps=40):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    ts = []
    for _ in range(reps):
        flush.zero_()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        ts.append(start.elapsed_time(end))
    ts.sort()
    return ts[len(ts) // 2]


def ulp_err(out, ref, dt):
    """The largest |out - ref| in units of the output dtype's ulp at ref."""
    a = ref.abs().clamp_min(torch.finfo(DT[dt]).tiny)
    bits = 7 if dt == "bf16" else 23
    ulp = torch.exp2((torch.floor(torch.log2(a)) - bits).clamp_min(-126 - bits))
    return ((out.double() - ref).abs() / ulp).max().item()


def norms(x, w, b):
    return torch.softmax(F.gelu(F.layer_norm(x, (x.shape[-1],), w, b)) + x, dim=-1)


CASES = {
    "norms": (lambda x, w, b: norms(x, w, b), 3),
    "softmax": (lambda x: torch.softmax(x, -1), 1),
    "sum": (lambda x: x.sum(-1), 1),
    "argmax": (lambda x: x.argmax(-1), 1),
    "pointwise": (lambda x: torch.relu(x) * x, 1),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inductor", action="store_true", help="also time torch.compile (norms)")
    ap.add_argument("--json")
    ap.add_argument("variants", nargs="+")
    a = ap.parse_args()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows = []
    data = {}
    ok = True
    for v in a.variants:
        parts = v.split(":")
        case, dt, nr, nc, path, grid, block = parts[:7]
        nr, nc, grid, block = int(nr), int(nc), int(grid), int(block)
        label = parts[7] if len(parts) > 7 else path
        fn, nin = CASES[case]
        key = (case, dt, nr, nc)
        if key not in data:
            torch.manual_seed(0)
            ins = [torch.randn(nr, nc, device="cuda").to(DT[dt])]
            ins += [torch.randn(nc, device="cuda").to(DT[dt]) for _ in range(nin - 1)]
            ref = fn(*[t.double() for t in ins])
            res = fn(*ins)
            nbytes = ins[0].numel() * ins[0].element_size() + res.numel() * res.element_size()
            y = torch.empty_like(ins[0])
            copy_ms = time_ms(lambda: y.copy_(ins[0]), flush)
            data[key] = (ins, ref, res, nbytes, copy_ms)
            base = {"case": case, "dtype": dt, "shape": [nr, nc]}
            extra = [("inductor", torch.compile(fn))] if a.inductor and case == "norms" else []
            for name, f in [("copy", None), ("eager", fn)] + extra:
                ms = copy_ms if f is None else time_ms(lambda: f(*ins), flush)
                r = dict(base, variant=name, ms=ms, GBps=nbytes / ms / 1e6,
                         pct_copy=100 * copy_ms / ms)
                if name == "eager" and case != "argmax":
                    r["ulp_err"] = ulp_err(res, ref, dt)
                rows.append(r)
                print(json.dumps(r), flush=True)
        ins, ref, res, nbytes, copy_ms = data[key]
        text = open(path).read()
        kname = text.split(".visible .entry ")[1].split("(")[0]
        k = cp.RawModule(path=path).get_function(kname)
        out = torch.empty_like(res)
        args = tuple(cp.asarray(t) for t in ins + [out]) + (cp.int64(nr),)
        stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)

        def launch():
            with stream:
                k((grid,), (block,), args)

        launch()
        torch.cuda.synchronize()
        if case == "argmax":
            err = float((out != ref).sum().item())
            tol = 0.0
        else:
            err = (out.double() - ref).abs().max().item()
            tol = (2e-2 if dt == "bf16" else 1e-4) * max(1.0, ref.abs().max().item())
        good = err <= tol
        ok = ok and good
        ms = time_ms(launch, flush)
        r = {"case": case, "dtype": dt, "shape": [nr, nc], "variant": label, "grid": grid,
             "block": block, "ms": ms, "GBps": nbytes / ms / 1e6, "pct_copy": 100 * copy_ms / ms,
             "max_err": err, "ok": good, "regs": getattr(k, "num_regs", None)}
        if case != "argmax":
            r["ulp_err"] = ulp_err(out, ref, dt)
        rows.append(r)
        print(json.dumps(r), flush=True)
    if a.json:
        json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows}, open(a.json, "w"), indent=1)
    print("ALL OK" if ok else "SOME FAILED")


if __name__ == "__main__":
    main()
