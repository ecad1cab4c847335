#!/usr/bin/env python3
"""Exports the data-dependent fixtures of test/fixtures/datadep (torch 2.11, on the GPU machine):
graphs whose sizes depend on values (boolean-mask indexing, nonzero, masked_select, unique), as
torch.export writes them (unbacked symbols u0.., sym_size and _assert_scalar nodes), each as the
default export (NAME.pt2) and in core ATen (NAME.core.pt2), with PyTorch's outputs on the inputs
in NAME.<k>.io.safetensors (input_0.., output_0..). Usage: export_datadep.py OUT_DIR
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_single_ops import save_safetensors  # noqa: E402


class MaskedMean(torch.nn.Module):  # x[x > 0]: aten.index.Tensor with a bool mask
    def forward(self, x):
        y = x[x > 0]
        return y.sum(), y * 2 + 1


class NonzeroGather(torch.nn.Module):  # rows where the mask holds, then a matmul on them
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 4)

    def forward(self, x, m):
        idx = torch.nonzero(m)[:, 0]
        rows = x.index_select(0, idx)
        return self.proj(rows).relu()


class SelectUnique(torch.nn.Module):  # masked_select, then unique with inverse and counts
    def forward(self, ids, keep):
        kept = torch.masked_select(ids, keep)
        values, inverse, counts = torch.unique(kept, return_inverse=True, return_counts=True)
        return values, inverse, counts, torch.unique_consecutive(ids.flatten())


class DynamicBatchSelect(torch.nn.Module):  # a dynamic batch and a data-dependent size
    def forward(self, x):
        flat = x.reshape(x.shape[0], -1)
        big = flat[flat.abs() > 1.0]
        return big.abs().mean(), flat.sum(dim=1)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    cases = {
        "masked_mean": (MaskedMean(), [(torch.randn(6, 5, generator=g),),
                                       (torch.randn(6, 5, generator=g).abs().neg(),)], None),
        "nonzero_gather": (NonzeroGather(), [
            (torch.randn(10, 8, generator=g), torch.rand(10, 3, generator=g) > 0.6),
            (torch.randn(10, 8, generator=g), torch.rand(10, 3, generator=g) > 0.2)], None),
        "select_unique": (SelectUnique(), [
            (torch.randint(0, 5, (4, 6), generator=g), torch.rand(4, 6, generator=g) > 0.3),
            (torch.randint(-3, 3, (4, 6), generator=g), torch.rand(4, 6, generator=g) > 0.7)],
            None),
        "dynamic_select": (DynamicBatchSelect(), [(torch.randn(3, 4, 5, generator=g),),
                                                  (torch.randn(7, 4, 5, generator=g),)],
                           ({0: torch.export.Dim("batch", min=1, max=64)},)),
    }
    for name, (mod, samples, dyn) in cases.items():
        mod.eval()
        torch.manual_seed(0)
        with torch.no_grad():
            for p in mod.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
        ep = torch.export.export(mod, samples[0], dynamic_shapes=dyn)
        torch.export.save(ep, os.path.join(out, name + ".pt2"))
        torch.export.save(ep.run_decompositions(), os.path.join(out, name + ".core.pt2"))
        for k, args in enumerate(samples):
            with torch.no_grad():
                res = mod(*args)
            res = res if isinstance(res, tuple) else (res,)
            io = {"input_%d" % i: t for i, t in enumerate(args)}
            io.update({"output_%d" % i: t for i, t in enumerate(res)})
            save_safetensors(io, os.path.join(out, "%s.%d.io.safetensors" % (name, k)))
        print(name, "ok:", sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"}))


if __name__ == "__main__":
    main()
