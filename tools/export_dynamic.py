# Exports fxc's dynamic-shape fixtures with torch.export and dynamic_shapes (run on the GPU
# machine, which has torch 2.11): python3 tools/export_dynamic.py OUTDIR
# For each NAME: NAME.pt2 (default export), NAME.core.pt2 (run_decompositions), their printed
# graphs, and reference inputs/outputs at three sizes, NAME.<tag>.io.safetensors
# (input_<i>, output_<i>); for the models trained in tests, NAME.<tag>.grad.safetensors
# (output_<i>, grad.<param>, grad.input_<i>: gradients of the sum of the outputs).
import os, sys, json
import torch, torch.nn as nn, torch.nn.functional as F
from torch.export import Dim
from safetensors.torch import save_file


class MLP(nn.Module):
    def __init__(s, d=256):
        super().__init__(); s.fc1 = nn.Linear(d, d); s.fc2 = nn.Linear(d, d)
    def forward(s, x):
        x = F.relu(s.fc1(x)) ** 2
        return F.relu(s.fc2(x)) ** 2
class Block(nn.Module):
    def __init__(s, d=128, h=4):
        super().__init__(); s.ln1 = nn.LayerNorm(d); s.ln2 = nn.LayerNorm(d)
        s.qkv = nn.Linear(d, 3*d); s.proj = nn.Linear(d, d); s.fc = nn.Linear(d, 4*d); s.out = nn.Linear(4*d, d); s.h = h
    def forward(s, x):
        B, T, C = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(C, dim=2)
        q = q.view(B, T, s.h, C // s.h).transpose(1, 2); k = k.view(B, T, s.h, C // s.h).transpose(1, 2); v = v.view(B, T, s.h, C // s.h).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + s.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + s.out(F.gelu(s.fc(s.ln2(x)), approximate="tanh"))
class ConvNet(nn.Module):
    def __init__(s):
        super().__init__()
        s.c1 = nn.Conv2d(3, 16, 3, padding=1); s.b1 = nn.BatchNorm2d(16); s.c2 = nn.Conv2d(16, 32, 3, padding=1); s.b2 = nn.BatchNorm2d(32)
        s.fc = nn.Linear(32, 10)
    def forward(s, x):
        x = F.max_pool2d(F.relu(s.b1(s.c1(x))), 2)
        x = F.relu(s.b2(s.c2(x)))
        return s.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))
class Embed(nn.Module):
    def __init__(s, V=1000, d=64):
        super().__init__(); s.emb = nn.Embedding(V, d); s.pos = nn.Parameter(torch.randn(32, d)); s.w = nn.Parameter(torch.ones(d))
        s.up = nn.Linear(d, 2*d, bias=False); s.gate = nn.Linear(d, 2*d, bias=False); s.down = nn.Linear(2*d, d, bias=False)
    def forward(s, ids):
        x = s.emb(ids) + s.pos[: ids.shape[1]]
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * s.w
        return x + s.down(F.silu(s.gate(x)) * s.up(x))

def leaves(o):
    if hasattr(o, "last_hidden_state"): o = (o.last_hidden_state,)
    if isinstance(o, torch.Tensor): o = (o,)
    return [x for x in o if isinstance(x, torch.Tensor)]

def export_models(models, out):
    """Exports each model (module, example inputs, dynamic_shapes, {tag: inputs}, train tags) into
    out: NAME.pt2, NAME.core.pt2, their printouts, NAME.<tag>.io.safetensors (and
    .grad.safetensors for the train tags), and report.json."""
    report = {"torch": torch.__version__}
    for name, (m, ex, ds, sizes, train) in models.items():
        try:
            try:
                ep = torch.export.export(m, ex, dynamic_shapes=ds)
            except Exception as e:
                # torch.export may refuse a range that includes 1; start at 2 then.
                print(name, "retry with min 2:", str(e)[:200])
                ds = tuple({k: Dim(v.__name__, min=2, max=v.max) for k, v in d.items()} for d in ds)
                ep = torch.export.export(m, ex, dynamic_shapes=ds)
            core = ep.run_decompositions()
            torch.export.save(ep, f"{out}/{name}.pt2")
            torch.export.save(core, f"{out}/{name}.core.pt2")
            open(f"{out}/{name}.graph.txt", "w").write(str(ep.graph) + "\n" + str(ep.range_constraints) + "\n")
            open(f"{out}/{name}.core.graph.txt", "w").write(str(core.graph) + "\n" + str(core.range_constraints) + "\n")
            report[name] = {"range_constraints": str(ep.range_constraints), "sizes": {}}
            for tag, ins in sizes.items():
                mod = ep.module()
                try:
                    with torch.no_grad():
                        outs = leaves(mod(*ins))
                    t = {f"input_{i}": x.contiguous() for i, x in enumerate(ins)}
                    t.update({f"output_{i}": o.contiguous() for i, o in enumerate(outs)})
                    save_file(t, f"{out}/{name}.{tag}.io.safetensors")
                    report[name]["sizes"][tag] = "ok"
                except Exception as e:
                    report[name]["sizes"][tag] = "refused: " + str(e)[:300]
                    continue
                if tag in train:
                    xs = [x.clone().requires_grad_(x.is_floating_point()) for x in ins]
                    for q in mod.parameters(): q.requires_grad_(True); q.grad = None
                    outs = leaves(mod(*xs))
                    sum(o.sum() for o in outs if o.is_floating_point()).backward()
                    g = {f"output_{i}": o.detach().contiguous() for i, o in enumerate(outs)}
                    g.update({f"grad.{n}": q.grad.contiguous() for n, q in mod.named_parameters() if q.grad is not None})
                    g.update({f"grad.input_{i}": x.grad.contiguous() for i, x in enumerate(xs) if x.grad is not None})
                    save_file(g, f"{out}/{name}.{tag}.grad.safetensors")
            print(name, "ok", report[name], flush=True)
        except Exception as e:
            report[name] = {"error": repr(e)[:800]}
            print(name, "ERROR", repr(e)[:800], flush=True)
    json.dump(report, open(f"{out}/report.json", "w"), indent=1)

def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    def batch(lo, hi): return Dim("batch", min=lo, max=hi)
    models = {}
    # name: (module, example inputs, dynamic_shapes, {tag: inputs}, train tags)
    models["mlp"] = (MLP(), (torch.randn(64, 256),), ({0: batch(1, 4096)},),
                     {"b64": (torch.randn(64, 256),), "b1": (torch.randn(1, 256),), "b3": (torch.randn(3, 256),), "b200": (torch.randn(200, 256),)}, ["b64", "b3"])
    models["convnet"] = (ConvNet().eval(), (torch.randn(4, 3, 16, 16),), ({0: batch(1, 512)},),
                         {"b4": (torch.randn(4, 3, 16, 16),), "b1": (torch.randn(1, 3, 16, 16),), "b7": (torch.randn(7, 3, 16, 16),)}, [])
    models["block"] = (Block(), (torch.randn(2, 16, 128),), ({0: batch(1, 64), 1: Dim("seq", min=2, max=128)},),
                       {"b2t16": (torch.randn(2, 16, 128),), "b1t5": (torch.randn(1, 5, 128),), "b3t40": (torch.randn(3, 40, 128),)}, ["b2t16", "b1t5"])
    models["embed"] = (Embed(), (torch.randint(0, 1000, (4, 16)),), ({0: batch(1, 64), 1: Dim("seq", min=2, max=32)},),
                       {"b4t16": (torch.randint(0, 1000, (4, 16)),), "b1t3": (torch.randint(0, 1000, (1, 3)),), "b2t32": (torch.randint(0, 1000, (2, 32)),)}, [])
    try:
        from transformers import BertConfig, BertModel
        b = BertModel(BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128, vocab_size=500, max_position_embeddings=64)).eval()
        models["berttiny"] = (b, (torch.randint(0, 500, (2, 16)),), ({0: batch(1, 32), 1: Dim("seq", min=2, max=64)},),
                              {"b2t16": (torch.randint(0, 500, (2, 16)),), "b1t9": (torch.randint(0, 500, (1, 9)),), "b4t33": (torch.randint(0, 500, (4, 33)),)}, [])
    except Exception as e:
        print("transformers:", e)
    export_models(models, out)


if __name__ == "__main__":
    main()
