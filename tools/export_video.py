#!/usr/bin/env python3
"""Exports video3d.pt2 / video3d.core.pt2 (torch.export, then run_decompositions) and
video3d.io.safetensors (input_0, output_0 in float32) into the current folder (the copies in
test/fixtures/video): a small 3-D CNN
with the ops of torchvision's video models (conv3d, batch_norm on 5-D, max_pool3d,
adaptive_avg_pool3d) plus conv1d, adaptive_avg_pool1d and diagonal. Needs torch >= 2.5 (the
checked-in files were made with torch 2.11). Usage: python3 tools/export_video.py"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

torch.manual_seed(0)


class Video3D(nn.Module):
    def __init__(s):
        super().__init__()
        s.c1 = nn.Conv3d(3, 8, 3, stride=(1, 2, 2), padding=1); s.b1 = nn.BatchNorm3d(8)
        s.c2 = nn.Conv3d(8, 16, (3, 1, 3), padding=(1, 0, 1)); s.b2 = nn.BatchNorm3d(16)
        s.c3 = nn.Conv1d(16, 16, 3, padding=1); s.fc = nn.Linear(16, 5)

    def forward(s, x):
        x = F.max_pool3d(F.relu(s.b1(s.c1(x))), 2)
        x = F.relu(s.b2(s.c2(x)))
        y = F.adaptive_avg_pool3d(x, (1, 3, 1)).flatten(2)           # N, 16, 3
        y = F.adaptive_avg_pool1d(s.c3(y), 1).flatten(1)             # N, 16
        return s.fc(y) + torch.diagonal(x[:, :5, 0, :, 0], 0, 1, 2).sum(-1, keepdim=True)


m = Video3D().eval()
for b in (m.b1, m.b2):
    b.running_mean.uniform_(-0.5, 0.5); b.running_var.uniform_(0.5, 1.5)
x = torch.randn(2, 3, 6, 16, 12)
with torch.no_grad():
    ep = torch.export.export(m, (x,))
    torch.export.save(ep, "video3d.pt2")
    core = ep.run_decompositions()
    torch.export.save(core, "video3d.core.pt2")
    out = m(x)
save_file({"input_0": x.contiguous(), "output_0": out.contiguous()}, "video3d.io.safetensors")
open("video3d.graph.txt", "w").write(str(ep.graph))
open("video3d.core.graph.txt", "w").write(str(core.graph))
