# Exports small torchvision models with torch.export (default and core ATen) for fxc's tests
# (run on the GPU machine, which has torch 2.11 and torchvision): python3 tools/export_small_cnns.py OUTDIR
import os, sys, time
import torch
from safetensors.torch import save_file

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
import torchvision
from torchvision.models import efficientnet as E
print("torch", torch.__version__, "torchvision", torchvision.__version__)

def mini_efficientnet():
    # EfficientNet-B0's MBConv blocks (depthwise conv, squeeze-excite, SiLU, batch norm,
    # stochastic depth) at a quarter of the width and a third of the depth.
    setting, last = E._efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.34)
    return E.EfficientNet(setting, 0.2, num_classes=10, last_channel=last)

models = {
    "effnet_mini": (mini_efficientnet().eval(), (torch.randn(2, 3, 32, 32),)),
    "effnet_b0": (torchvision.models.efficientnet_b0(num_classes=10).eval(), (torch.randn(2, 3, 64, 64),)),
    "mobilenet_v3_small": (torchvision.models.mobilenet_v3_small(num_classes=10).eval(), (torch.randn(2, 3, 64, 64),)),
}
for name, (m, ins) in models.items():
    t0 = time.time()
    ep = torch.export.export(m, ins)
    core = ep.run_decompositions()
    if name == "effnet_mini":
        torch.export.save(ep, f"{out}/{name}.pt2")
    torch.export.save(core, f"{out}/{name}.core.pt2")
    with torch.no_grad():
        o = m(*ins)
    t = {f"input_{i}": x.contiguous() for i, x in enumerate(ins)}
    outs = o if isinstance(o, (tuple, list)) else (o,)
    t.update({f"output_{i}": x.contiguous() for i, x in enumerate(outs)})
    save_file(t, f"{out}/{name}.io.safetensors")
    print(name, "exported in %.1f s" % (time.time() - t0), os.path.getsize(f"{out}/{name}.core.pt2"))
