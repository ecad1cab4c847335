#!/usr/bin/env python3
"""The memory-bound floor on the GPU machine: device-to-device copy bandwidth (bytes read +
written per second) of a tensor the size of seed_models.py's norms input, timed like the
anchors (triton.testing.do_bench, median, L2 flushed).

  python3 copy_bw.py [--json out.json]
"""
import argparse, json
import torch
from triton.testing import do_bench

def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--json"); a = ap.parse_args()
    rows = []
    for name, dt in [("f32", torch.float32), ("bf16", torch.bfloat16)]:
        x = torch.randn(8192, 4096, device="cuda").to(dt); y = torch.empty_like(x)
        ms = do_bench(lambda: y.copy_(x), warmup=50, rep=300, return_mode="median")
        moved = 2 * x.numel() * x.element_size()
        r = {"dtype": name, "bytes": moved, "copy_ms": ms, "copy_GBps": moved / ms / 1e6}
        rows.append(r); print(r, flush=True)
    if a.json:
        json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows}, open(a.json, "w"), indent=1)

if __name__ == "__main__":
    main()
