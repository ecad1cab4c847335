# Exports small transformer models with torch.export for fxc's tests (run on the GPU machine:
# torch 2.11, transformers, torchvision): python3 tools/export_lm.py OUTDIR
# llama_tiny: LlamaModel (RoPE, RMSNorm, GQA, causal mask), static and with Dim("seq");
# swin_tiny: torchvision's SwinTransformer at a small width (windowed attention, roll).
import os, sys
import torch
from torch.export import Dim
from safetensors.torch import save_file

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)

def save_io(name, ins, outs):
    t = {f"input_{i}": x.contiguous() for i, x in enumerate(ins)}
    t.update({f"output_{i}": o.contiguous() for i, o in enumerate(outs)})
    save_file(t, f"{out}/{name}.io.safetensors")

def leaves(o):
    if hasattr(o, "last_hidden_state"): o = (o.last_hidden_state,)
    if isinstance(o, torch.Tensor): o = (o,)
    return [x for x in o if isinstance(x, torch.Tensor)]

def export(name, m, ins, ds=None, sizes=None):
    try:
        with torch.no_grad():
            ep = torch.export.export(m, ins, dynamic_shapes=ds)
            torch.export.save(ep, f"{out}/{name}.pt2")
            torch.export.save(ep.run_decompositions(), f"{out}/{name}.core.pt2")
            save_io(name, ins, leaves(m(*ins)))
            for tag, x in (sizes or {}).items():
                save_io(f"{name}.{tag}", x, leaves(m(*x)))
        print(name, "ok", flush=True)
    except Exception as e:
        print(name, "ERROR", repr(e)[:600], flush=True)

from transformers import LlamaConfig, LlamaModel
cfg = LlamaConfig(num_hidden_layers=1, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=256, max_position_embeddings=64)
class Llama(torch.nn.Module): # the hidden states only (no KV cache object in the outputs)
    def __init__(s):
        super().__init__(); s.m = LlamaModel(cfg)
    def forward(s, ids):
        return s.m(input_ids=ids, use_cache=False).last_hidden_state
llama = Llama().eval()
ids = torch.randint(0, 256, (1, 16))
export("llama_tiny", llama, (ids,))
export("llama_tiny_dyn", llama, (ids,), ({1: Dim("seq", min=2, max=64)},),
       {"t5": (torch.randint(0, 256, (1, 5)),), "t33": (torch.randint(0, 256, (1, 33)),)})
try:
    from torchvision.models.swin_transformer import SwinTransformer
    swin = SwinTransformer(patch_size=[4, 4], embed_dim=24, depths=[2, 2], num_heads=[2, 4],
                           window_size=[4, 4], num_classes=10).eval()
    export("swin_tiny", swin, (torch.randn(1, 3, 32, 32),))
except Exception as e:
    print("swin ERROR", repr(e)[:600])
