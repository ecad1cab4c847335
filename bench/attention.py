#!/usr/bin/env python3
"""Fused attention on the GPU machine (issue 20): the graphs fxc compiles and PyTorch's times.

  attention.py export DIR     one torch.export archive per case (scaled_dot_product_attention as
                              torch.export writes it by default), DIR/NAME.pt2, and for the small
                              cases DIR/NAME.io.safetensors (inputs and PyTorch's CUDA output)
  attention.py torch DIR      PyTorch's scaled_dot_product_attention on the same shapes, timed with
                              triton's do_bench: the default backend choice (FlashAttention on
                              Hopper) and cuDNN's (SDPBackend.CUDNN_ATTENTION); DIR/torch.json
Cases: NAME = attn_{dtype}_b{B}_h{H}_s{S}_d{D}[_causal]; q, k, v [B, H, S, D].
"""
import json
import sys

CASES = [  # (batch, heads, seq, head dim, causal); the first two are checked against PyTorch
    (2, 4, 256, 64, False),
    (2, 4, 256, 128, True),
    (4, 16, 4096, 128, False),
    (4, 16, 4096, 128, True),
    (16, 16, 1024, 128, False),
    (8, 16, 2048, 64, False),
]
CHECKED = 2


def name(b, h, s, d, causal, dtype="bf16"):
    return f"attn_{dtype}_b{b}_h{h}_s{s}_d{d}" + ("_causal" if causal else "")


def flops(b, h, s, d, causal):
    f = 4 * b * h * s * s * d  # two matmuls of 2·s·s·d per batch and head
    return f / 2 if causal else f


def export(out):
    import torch
    from safetensors.torch import save_file

    class Attention(torch.nn.Module):
        def __init__(self, causal):
            super().__init__()
            self.causal = causal

        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=self.causal)

    for i, (b, h, s, d, causal) in enumerate(CASES):
        g = torch.Generator().manual_seed(i)
        qkv = [torch.randn(b, h, s, d, generator=g).to(torch.bfloat16) for _ in range(3)]
        m = Attention(causal).eval()
        ep = torch.export.export(m, tuple(qkv), strict=False)
        torch.export.save(ep, f"{out}/{name(b, h, s, d, causal)}.pt2")
        if i < CHECKED:
            with torch.no_grad():
                ref = m(*[x.cuda() for x in qkv]).cpu()
            t = {f"input_{j}": x.contiguous() for j, x in enumerate(qkv)}
            t["output_0"] = ref.contiguous()
            save_file(t, f"{out}/{name(b, h, s, d, causal)}.io.safetensors")
        print("exported", name(b, h, s, d, causal), flush=True)


def torch_times(out):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench

    res = {}
    for (b, h, s, d, causal) in CASES:
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        row = {}
        for label, backends in (("default", None), ("cudnn", [SDPBackend.CUDNN_ATTENTION]),
                                ("flash", [SDPBackend.FLASH_ATTENTION])):
            def run():
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            try:
                if backends:
                    with sdpa_kernel(backends):
                        ms = do_bench(run, warmup=50, rep=300)
                else:
                    ms = do_bench(run, warmup=50, rep=300)
                row[label] = {"ms": ms, "tflops": flops(b, h, s, d, causal) / ms / 1e9}
            except Exception as e:  # a backend that does not take the case
                row[label] = {"error": str(e).splitlines()[0][:200] if str(e) else type(e).__name__}
        res[name(b, h, s, d, causal)] = row
        print(name(b, h, s, d, causal), json.dumps(row), flush=True)
    with open(f"{out}/torch.json", "w") as f:
        json.dump(res, f, indent=1)


def table(out, fxc_json_dir):
    """Markdown table from DIR/torch.json and the fxc JSON files (NAME.fxc.json)."""
    t = json.load(open(f"{out}/torch.json"))
    lines = ["| case | flops (G) | fxc ms | fxc TFLOP/s | torch default ms | TFLOP/s | "
             "torch cuDNN ms | TFLOP/s | torch flash ms | TFLOP/s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in CASES:
        n = name(*c)
        f = flops(*c)
        try:
            fx = json.load(open(f"{fxc_json_dir}/{n}.fxc.json"))
            fms = fx["median_ms"]
            fcell = f"{fms:.3f} | {f / fms / 1e9:.0f}"
        except Exception:
            fcell = "failed | -"
        cells = []
        for label in ("default", "cudnn", "flash"):
            e = t.get(n, {}).get(label, {})
            cells.append(f"{e['ms']:.3f} | {e['tflops']:.0f}" if "ms" in e else "n/a | -")
        lines.append(f"| {n} | {f / 1e9:.1f} | {fcell} | " + " | ".join(cells) + " |")
    print("\n".join(lines))


def main():
    cmd, out = sys.argv[1], sys.argv[2]
    if cmd == "export":
        export(out)
    elif cmd == "torch":
        torch_times(out)
    elif cmd == "table":
        table(out, sys.argv[3] if len(sys.argv) > 3 else out)
    elif cmd == "names":
        for i, c in enumerate(CASES):
            print(name(*c), "checked" if i < CHECKED else "timed")
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
