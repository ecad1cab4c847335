# Probes of what torch.export writes for dynamic shapes beyond the fixtures of
# tools/export_dynamic.py: sizes computed with floor division, modulo, non-integer scale factors
# (FloorToInt/ToFloat), derived dims (2*Dim), two inputs sharing a dim, symbolic ints in factory
# functions, arange/masks over a dynamic length, a symbolic scalar in arithmetic. Run on the GPU
# machine (torch 2.11): python3 tools/export_dynamic_probe.py OUTDIR
# Writes, per NAME: NAME.pt2, NAME.core.pt2, their printouts, NAME.<tag>.io.safetensors at each
# size (input_<i>, output_<i>), and report.json (what exported, what refused), as
# tools/export_dynamic.py's export_models does. --models: real architectures instead (not kept in
# git but t5_tiny, gpt2_tiny, llama_tiny); --more: further torchvision and transformers
# architectures (none kept); --only=a,b: those models only.
import os, sys, json, math
import torch, torch.nn as nn, torch.nn.functional as F
from torch.export import Dim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_dynamic import export_models  # the export loop, shared with the fixtures

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)

class Upsample(nn.Module):  # nearest x2, bilinear x1.5 (FloorToInt of a float), size from shapes
    def forward(s, x):
        a = F.interpolate(x, scale_factor=2, mode="nearest")
        b = F.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=False)
        c = F.interpolate(x, size=(x.shape[2] + 3, x.shape[3] * 2), mode="bilinear", align_corners=True)
        return a.sum((2, 3)) + b.mean((2, 3)) + c.amax((2, 3))
class HalfSplit(nn.Module):  # floordiv slices, chunk, a derived view
    def forward(s, x):
        h = x.shape[1] // 2
        a, b = x[:, :h], x[:, h:2 * h]
        c0, c1 = x.chunk(2, dim=1)
        return (a * b).sum(1) + (c0[:, :1] - c1[:, -1:]).sum(1), x.reshape(x.shape[0], -1, 2).sum(-1)
class PadTo8(nn.Module):  # pad a dim to a multiple of 8: a Mod expression
    def forward(s, x):
        p = (8 - x.shape[-1] % 8) % 8
        y = F.pad(x, (0, p))
        return y.view(x.shape[0], -1, 8).sum(-1)
class Causal(nn.Module):  # arange and masks over the dynamic length, scale from the head dim
    def __init__(s, d=32):
        super().__init__(); s.q = nn.Linear(d, d); s.k = nn.Linear(d, d)
    def forward(s, x):
        T = x.shape[1]
        pos = torch.arange(T, device=x.device)
        mask = pos[None, :] <= pos[:, None]
        att = s.q(x) @ s.k(x).transpose(1, 2) / math.sqrt(x.shape[-1])
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        tri = torch.ones(T, T, device=x.device).tril()
        return att @ x + (tri @ x) / T
class Factory(nn.Module):  # symbolic sizes in factory functions, expand, cat along the dim
    def forward(s, x, y):
        z = torch.zeros(x.shape[0], 4, dtype=x.dtype)
        o = x.new_ones(x.shape[0], x.shape[1] * 2)
        cat = torch.cat([x, y], dim=0)  # s0 + s1 rows
        e = x.mean(0, keepdim=True).expand(y.shape[0], -1)
        return torch.cat([x, z], 1).sum(1), o.sum(), cat.std(0), e + y
class Derived(nn.Module):  # a dim declared as 2*Dim: even sizes only
    def forward(s, x):
        B, L = x.shape
        return x.view(B, L // 2, 2).transpose(1, 2).reshape(B, L).cumsum(1)
class Conv1dStride(nn.Module):  # conv output length (L - 3)//2 + 1, adaptive pooling to fixed size
    def __init__(s):
        super().__init__(); s.c = nn.Conv1d(4, 8, 3, stride=2); s.c2 = nn.Conv2d(3, 4, 3, padding=1)
    def forward(s, x, img):
        y = s.c(x)
        z = F.adaptive_avg_pool2d(s.c2(img), (5, 3))
        w = F.max_pool2d(img, 3, stride=2, ceil_mode=True)
        return y.relu().mean(-1), z.flatten(1), w.sum((2, 3))
class SymScalar(nn.Module):  # the size itself as a number in arithmetic, roll by half
    def forward(s, x):
        n = x.shape[0]
        return x * n + torch.roll(x, shifts=n // 2, dims=0), (x.sum(0) / n).unsqueeze(0).repeat(n, 1)
class Gather(nn.Module):  # index_select/gather with indices built from the size, flip, topk
    def forward(s, x):
        idx = torch.arange(0, x.shape[1], 2)
        y = x.index_select(1, idx)
        v, i = x.topk(2, dim=1)
        return y.flip(1), v, i, x.gather(1, i)
class Embedding(nn.Module):  # a position table sliced to the length, layer norm, GELU MLP
    def __init__(s, V=50, d=16):
        super().__init__(); s.e = nn.Embedding(V, d); s.p = nn.Parameter(torch.randn(64, d)); s.ln = nn.LayerNorm(d); s.fc = nn.Linear(d, d)
    def forward(s, ids):
        h = s.ln(s.e(ids) + s.p[: ids.shape[1]].unsqueeze(0))
        return F.gelu(s.fc(h)).max(1).values

def D(name, lo, hi): return Dim(name, min=lo, max=hi)

def tile_weights(models):
    """Weights tiled from 1021 random values (with each tensor's own mean and spread): the
    archives compress to little, for the trip back from the GPU machine."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m, *_ in models.values():
            for p in m.parameters():
                base = torch.randn(1021, generator=g) * p.std().nan_to_num(0.02) + p.mean()
                p.copy_(base.repeat(p.numel() // 1021 + 1)[: p.numel()].view_as(p))
B = D("batch", 1, 256)
models = {
    "upsample": (Upsample(), (torch.randn(2, 3, 8, 10),), ({0: B, 2: D("h", 2, 64), 3: D("w", 2, 64)},),
                 {"b2h8w10": (torch.randn(2, 3, 8, 10),), "b1h5w3": (torch.randn(1, 3, 5, 3),), "b3h13w17": (torch.randn(3, 3, 13, 17),)}),
    "halfsplit": (HalfSplit(), (torch.randn(3, 10),), ({0: B, 1: 2 * D("half", 1, 64)},),
                  {"b3l10": (torch.randn(3, 10),), "b1l4": (torch.randn(1, 4),), "b5l34": (torch.randn(5, 34),)}),
    "padto8": (PadTo8(), (torch.randn(2, 13),), ({0: B, 1: Dim.AUTO},),
               {"b2l13": (torch.randn(2, 13),), "b1l8": (torch.randn(1, 8),), "b4l57": (torch.randn(4, 57),)}),
    "causal": (Causal(), (torch.randn(2, 7, 32),), ({0: B, 1: D("seq", 2, 64)},),
               {"b2t7": (torch.randn(2, 7, 32),), "b1t2": (torch.randn(1, 2, 32),), "b3t33": (torch.randn(3, 33, 32),)}),
    "factory": (Factory(), (torch.randn(3, 5), torch.randn(4, 5)), ({0: D("n", 2, 100)}, {0: D("m", 2, 100)}),
                {"n3m4": (torch.randn(3, 5), torch.randn(4, 5)), "n2m9": (torch.randn(2, 5), torch.randn(9, 5)), "n7m2": (torch.randn(7, 5), torch.randn(2, 5))}),
    "derived": (Derived(), (torch.randn(2, 6),), ({0: B, 1: 2 * D("pairs", 1, 50)},),
                {"b2l6": (torch.randn(2, 6),), "b1l4": (torch.randn(1, 4),), "b3l20": (torch.randn(3, 20),)}),
    "conv1d": (Conv1dStride().eval(), (torch.randn(2, 4, 17), torch.randn(2, 3, 12, 9)),
               ({0: B, 2: D("len", 5, 300)}, {0: B, 2: Dim.AUTO, 3: Dim.AUTO}),
               {"b2": (torch.randn(2, 4, 17), torch.randn(2, 3, 12, 9)), "b1": (torch.randn(1, 4, 5), torch.randn(1, 3, 5, 3)), "b3": (torch.randn(3, 4, 40), torch.randn(3, 3, 21, 14))}),
    "symscalar": (SymScalar(), (torch.randn(6, 3),), ({0: D("n", 2, 128)},),
                  {"n6": (torch.randn(6, 3),), "n2": (torch.randn(2, 3),), "n11": (torch.randn(11, 3),)}),
    "gather": (Gather(), (torch.randn(3, 9),), ({0: B, 1: D("len", 3, 100)},),
               {"b3l9": (torch.randn(3, 9),), "b1l3": (torch.randn(1, 3),), "b2l20": (torch.randn(2, 20),)}),
    "embedding": (Embedding(), (torch.randint(0, 50, (2, 9)),), ({0: B, 1: D("seq", 2, 64)},),
                  {"b2t9": (torch.randint(0, 50, (2, 9)),), "b1t2": (torch.randint(0, 50, (1, 2)),), "b4t31": (torch.randint(0, 50, (4, 31)),)}),
}

only = [a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--only=")]
if "--models" in sys.argv:  # real architectures with a dynamic batch (or size): not kept in git
    models.clear()
    import torchvision.models as tvm
    for name, ctor, hw in (("resnet18", tvm.resnet18, 64), ("mobilenet_v3_small", tvm.mobilenet_v3_small, 64),
                           ("efficientnet_b0", tvm.efficientnet_b0, 64), ("regnet_y_400mf", tvm.regnet_y_400mf, 64)):
        m = ctor().eval()
        models[name] = (m, (torch.randn(2, 3, hw, hw),), ({0: D("batch", 1, 64)},),
                        {"b2": (torch.randn(2, 3, hw, hw),), "b1": (torch.randn(1, 3, hw, hw),), "b5": (torch.randn(5, 3, hw, hw),)})
    m = tvm.resnet18().eval()  # dynamic height and width too: adaptive pooling of a symbolic map
    models["resnet18_hw"] = (m, (torch.randn(2, 3, 64, 64),), ({0: D("batch", 1, 64), 2: Dim.AUTO, 3: Dim.AUTO},),
                             {"b2h64w64": (torch.randn(2, 3, 64, 64),), "b1h33w47": (torch.randn(1, 3, 33, 47),), "b3h96w64": (torch.randn(3, 3, 96, 64),)})
    try:
        from transformers import ViTConfig, ViTModel, T5Config, T5Model, DistilBertConfig, DistilBertModel
        vit = ViTModel(ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, image_size=32, patch_size=8)).eval()
        class Hidden(nn.Module):
            def __init__(s, m): super().__init__(); s.m = m
            def forward(s, x): return s.m(x).last_hidden_state
        models["vit_tiny"] = (Hidden(vit), (torch.randn(2, 3, 32, 32),), ({0: D("batch", 1, 64)},),
                              {"b2": (torch.randn(2, 3, 32, 32),), "b1": (torch.randn(1, 3, 32, 32),), "b6": (torch.randn(6, 3, 32, 32),)})
        db = DistilBertModel(DistilBertConfig(vocab_size=100, dim=64, n_layers=2, n_heads=4, hidden_dim=128, max_position_embeddings=64)).eval()
        models["distilbert_tiny"] = (Hidden(db), (torch.randint(0, 100, (2, 11)),), ({0: D("batch", 1, 16), 1: D("seq", 2, 64)},),
                                     {"b2t11": (torch.randint(0, 100, (2, 11)),), "b1t2": (torch.randint(0, 100, (1, 2)),), "b3t40": (torch.randint(0, 100, (3, 40)),)})
        t5 = T5Model(T5Config(vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4)).eval()
        class T5(nn.Module):
            def __init__(s, m): super().__init__(); s.m = m
            def forward(s, ids, dec): return s.m(input_ids=ids, decoder_input_ids=dec, use_cache=False).last_hidden_state
        models["t5_tiny"] = (T5(t5), (torch.randint(0, 100, (2, 9)), torch.randint(0, 100, (2, 5))),
                             ({0: D("batch", 1, 16), 1: D("src", 2, 64)}, {0: D("batch", 1, 16), 1: D("tgt", 2, 64)}),
                             {"b2s9t5": (torch.randint(0, 100, (2, 9)), torch.randint(0, 100, (2, 5))),
                              "b1s3t2": (torch.randint(0, 100, (1, 3)), torch.randint(0, 100, (1, 2))),
                              "b3s30t17": (torch.randint(0, 100, (3, 30)), torch.randint(0, 100, (3, 17)))})
    except Exception as e:
        print("transformers:", e)

    tile_weights(models)

if "--models" in sys.argv:  # small decoder-only configs (weights as transformers makes them)
    try:  # small decoder-only configs from transformers: RoPE, RMSNorm, GQA, causal masks
        from transformers import LlamaConfig, LlamaForCausalLM, GPT2Config, GPT2LMHeadModel
        class Logits(nn.Module):
            def __init__(s, m):
                super().__init__(); s.m = m
            def forward(s, ids):
                return s.m(input_ids=ids, use_cache=False).logits
        llama = LlamaForCausalLM(LlamaConfig(vocab_size=120, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                             attn_implementation="eager")).eval()
        gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=120, n_embd=32, n_layer=2, n_head=4, n_positions=128,
                                          attn_implementation="eager")).eval()
        for name, m in (("llama_tiny", llama), ("gpt2_tiny", gpt2)):
            # LLaMA's rotary cache guards min(8*seq, 16*seq) == 8*seq, which torch cannot prove for
            # a declared range: Dim.AUTO lets it keep the guard.
            seq = Dim.AUTO if name == "llama_tiny" else D("seq", 2, 128)
            models[name] = (Logits(m), (torch.randint(0, 120, (2, 12)),), ({0: D("batch", 1, 16), 1: seq},),
                            {"b2t12": (torch.randint(0, 120, (2, 12)),), "b1t3": (torch.randint(0, 120, (1, 3)),), "b3t45": (torch.randint(0, 120, (3, 45)),)})
    except Exception as e:
        print("transformers:", e)

if "--more" in sys.argv:  # further architectures, a dynamic batch, not kept in git
    import importlib
    models.clear()
    def sizes(mk):
        return {"b2": mk(2), "b1": mk(1), "b3": mk(3)}
    def add(name, build, mk, dims=None):
        try:
            m = build().eval()
            models[name] = (m, mk(2), dims or tuple({0: D("batch", 1, 16)} for _ in mk(2)), sizes(mk))
        except Exception as e:
            print(name, "not built:", repr(e)[:300])
    img = lambda hw: (lambda b: (torch.randn(b, 3, hw, hw),))
    import torchvision.models as tvm
    import torchvision.models.segmentation as tvs
    import torchvision.models.video as tvv
    for name, hw in (("googlenet", 64), ("mnasnet0_5", 64), ("resnext50_32x4d", 64), ("efficientnet_v2_s", 64),
                     ("swin_v2_t", 64), ("maxvit_t", 224),
                     ("inception_v3", 96), ("densenet161", 64), ("mobilenet_v2", 64)):
        kw = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
        add(name, lambda: getattr(tvm, name)(**kw), img(hw))
    add("fcn_resnet50", lambda: tvs.fcn_resnet50(weights_backbone=None, aux_loss=False), img(64))
    add("lraspp_mnv3", lambda: tvs.lraspp_mobilenet_v3_large(weights_backbone=None), img(64))
    add("mc3_18", lambda: tvv.mc3_18(), lambda b: (torch.randn(b, 3, 4, 32, 32),))
    try:
        import transformers as T
        class Out(nn.Module):  # the first tensor of a transformers output
            def __init__(s, m, key): super().__init__(); s.m = m; s.key = key
            def forward(s, x): return getattr(s.m(x), s.key)
        ids = lambda v, t: (lambda b: (torch.randint(0, v, (b, t)),))
        seqdims = lambda n, lo=2: tuple({0: D("batch", 1, 16), 1: D("seq", lo, 64)} for _ in range(n))
        autoseq = ({0: D("batch", 1, 16), 1: Dim.AUTO},)  # the rotary cache's guards need AUTO
        small = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4)
        for name, cfg, cls in (("qwen2", "Qwen2Config", "Qwen2ForCausalLM"), ("mistral", "MistralConfig", "MistralForCausalLM"),
                               ("phi3", "Phi3Config", "Phi3ForCausalLM"), ("gemma", "GemmaConfig", "GemmaForCausalLM"),
                               ("qwen3", "Qwen3Config", "Qwen3ForCausalLM"), ("olmo", "OlmoConfig", "OlmoForCausalLM")):
            extra = {"num_key_value_heads": 2, "vocab_size": 120, "max_position_embeddings": 128, "head_dim": 8, "pad_token_id": 0}
            if name == "mistral": extra["sliding_window"] = 8
            add(name, lambda: Out(getattr(T, cls)(getattr(T, cfg)(**small, **extra, attn_implementation="eager")), "logits"),
                ids(120, 12), autoseq)
        add("bert", lambda: Out(T.BertModel(T.BertConfig(vocab_size=100, **small, max_position_embeddings=64)), "last_hidden_state"),
            ids(100, 11), seqdims(1))
        add("roberta", lambda: Out(T.RobertaModel(T.RobertaConfig(vocab_size=100, **small, max_position_embeddings=70)), "last_hidden_state"),
            ids(100, 11), seqdims(1))
        add("bart", lambda: Out(T.BartModel(T.BartConfig(vocab_size=100, d_model=32, encoder_layers=2, decoder_layers=2,
                                                         encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                                                         decoder_ffn_dim=64, max_position_embeddings=64)), "last_hidden_state"),
            ids(100, 11), seqdims(1, 3))
        add("deit", lambda: Out(T.DeiTModel(T.DeiTConfig(**small, image_size=32, patch_size=8)), "last_hidden_state"), img(32))
        add("beit", lambda: Out(T.BeitModel(T.BeitConfig(**small, image_size=32, patch_size=8, use_relative_position_bias=True)), "last_hidden_state"), img(32))
        add("clip_vision", lambda: Out(T.CLIPVisionModel(T.CLIPVisionConfig(**small, image_size=32, patch_size=8)), "last_hidden_state"), img(32))
        add("swin_hf", lambda: Out(T.SwinModel(T.SwinConfig(image_size=32, patch_size=2, embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4)), "last_hidden_state"), img(32))
        add("convnext_hf", lambda: Out(T.ConvNextModel(T.ConvNextConfig(hidden_sizes=[8, 16], depths=[1, 1], num_stages=2)), "last_hidden_state"), img(32))
        add("segformer", lambda: Out(T.SegformerModel(T.SegformerConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
                                                                       num_attention_heads=[1, 2], patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2])), "last_hidden_state"), img(32))
        add("mobilevit", lambda: Out(T.MobileViTModel(T.MobileViTConfig(image_size=64, hidden_sizes=[16, 24, 32], neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64])), "last_hidden_state"), img(64))
        add("wav2vec2", lambda: Out(T.Wav2Vec2Model(T.Wav2Vec2Config(**small, conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                                                                    num_feat_extract_layers=2, num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)), "last_hidden_state"),
            lambda b: (torch.randn(b, 800),))
        add("whisper_enc", lambda: Out(T.WhisperModel(T.WhisperConfig(vocab_size=100, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                                                                     decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=16,
                                                                     max_source_positions=20, max_target_positions=32, pad_token_id=0)).encoder, "last_hidden_state"),
            lambda b: (torch.randn(b, 16, 40),))
    except Exception as e:
        print("transformers:", repr(e)[:300])
    tile_weights(models)

if only:
    models = {k: v for k, v in models.items() if k in only[0]}
export_models({k: v + ([],) for k, v in models.items()}, out)  # no train references
