#!/usr/bin/env python3
"""Exports the model zoo (real torchvision / transformers architectures, random weights) with
torch.export, small enough to carry back from the GPU machine.

  python3 tools/export_zoo.py OUTDIR [NAME ...]        (torch 2.11; torchvision, transformers)

For each model, batch 2, float32, eval: NAME.pt2 (torch.export's default opset), NAME.core.pt2
(after run_decompositions(): core ATen) and NAME.out.safetensors (output_0 from eager on the
CPU) and NAME.grad.safetensors (output_0, and the gradients of out.sum() of the parameters under
4096 elements: grad.<name>). Every floating-point parameter or buffer of 4096 elements or more is first replaced by
values that tools/zoo_weights.py can regenerate anywhere (a counter-based hash, uniform, with the
tensor's own mean and standard deviation), and so are the inputs (images: mean 0, spread 1; token
ids: uniform in the vocabulary). The archives leave the machine with those entries zeroed and
deflated and without data/sample_inputs (a weight-less skeleton: NAME.pt2 is a few hundred KB
instead of 100 MB); `tools/zoo_weights.py restore` writes the weights back bit for bit and
writes NAME.in.safetensors. NAME.weights.json lists, per zip entry, the seed, element count,
mean and spread, and each input's seed, shape and dtype. A model that fails leaves no files.
"""
import json, os, sys, time, traceback, zipfile, zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_weights  # noqa: E402

import torch  # noqa: E402

BATCH = 2
SEQ = 128

# name -> (constructor, example inputs). Families: residual CNNs, mobile (depthwise, SE,
# hardswish), dense connections, channel shuffle, grouped convs, fire modules, 3-d video convs,
# segmentation (atrous convs, bilinear upsampling), vision transformers, shifted windows,
# encoder and decoder language models.
def _image(shape, seed=1):
    return dict(seed=seed, shape=list(shape), dtype="float32", mean=0.0, std=1.0)


def _ids(shape, high, seed=1):
    return dict(seed=seed, shape=list(shape), dtype="int64", high=high)


def _tv(name, shape=(BATCH, 3, 224, 224), **kw):
    def make():
        import torchvision
        return getattr(torchvision.models, name)(**kw), (_image(shape),)
    return make


def _video():
    import torchvision
    return torchvision.models.video.r3d_18(), (_image((BATCH, 3, 8, 112, 112)),)


class _Out(torch.nn.Module):  # one tensor out of a dict or ModelOutput
    def __init__(self, m, field, kw=False):
        super().__init__()
        self.m, self.field, self.kw = m, field, kw

    def forward(self, x):
        o = self.m(input_ids=x) if self.kw else self.m(x)
        return o[self.field] if isinstance(o, dict) else getattr(o, self.field)


def _deeplab():
    import torchvision
    m = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(weights=None,
                                                                      weights_backbone=None)
    return _Out(m, "out"), (_image((BATCH, 3, 224, 224)),)


def _lm(kind):
    def make():
        import transformers
        if kind == "bert_base":
            cfg = transformers.BertConfig()
            m = transformers.BertModel(cfg, add_pooling_layer=False)
            field = "last_hidden_state"
        elif kind == "gpt2":
            cfg = transformers.GPT2Config(n_layer=4)
            m = transformers.GPT2Model(cfg)
            field = "last_hidden_state"
        else:  # llama2l: a small decoder-only LLM: RoPE, RMSNorm, GQA, SwiGLU, causal
            cfg = transformers.LlamaConfig(vocab_size=32000, hidden_size=256,
                                           intermediate_size=688, num_hidden_layers=2,
                                           num_attention_heads=4, num_key_value_heads=2,
                                           max_position_embeddings=512)
            m = transformers.LlamaModel(cfg)
            field = "last_hidden_state"
        return _Out(m, field, kw=True), (_ids((BATCH, SEQ), cfg.vocab_size),)
    return make


class _HF(torch.nn.Module):  # a transformers model called with keyword inputs, one output
    def __init__(self, m, field, names):
        super().__init__()
        self.m, self.field, self.names = m, field, names

    def forward(self, *args):
        o = self.m(**dict(zip(self.names, args)))
        return o[self.field] if isinstance(o, dict) else getattr(o, self.field)


def _hf(model, config, field="last_hidden_state", inputs=("input_ids",), seq=SEQ, **cfg):
    """A small config of a transformers architecture; token ids (and decoder ids) as inputs."""
    def make():
        import transformers
        c = getattr(transformers, config)(**cfg)
        c._attn_implementation = cfg.get("attn_implementation", "sdpa")
        m = getattr(transformers, model)(c)
        vocab = getattr(c, "vocab_size", 1000)
        specs = []
        for i, name in enumerate(inputs):
            if name == "input_features":  # whisper: log-mel frames
                specs.append(_image((BATCH, c.num_mel_bins, 2 * c.max_source_positions), i + 1))
            elif name == "pixel_values":
                specs.append(_image((BATCH, 3, c.image_size, c.image_size) if isinstance(
                    getattr(c, "image_size", None), int) else (BATCH, 3, 224, 224), i + 1))
            else:
                specs.append(_ids((BATCH, seq if i == 0 else seq // 4), vocab, i + 1))
        return _HF(m, field, list(inputs)), tuple(specs)
    return make


_SMALL_LM = dict(vocab_size=8000, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                 num_attention_heads=4, max_position_embeddings=512)

MODELS = {
    "resnet50": _tv("resnet50"),
    "mobilenet_v3_large": _tv("mobilenet_v3_large"),
    "efficientnet_b0": _tv("efficientnet_b0"),
    "convnext_tiny": _tv("convnext_tiny"),
    "densenet121": _tv("densenet121"),
    "shufflenet_v2_x1_0": _tv("shufflenet_v2_x1_0"),
    "regnet_y_400mf": _tv("regnet_y_400mf"),
    "squeezenet1_1": _tv("squeezenet1_1"),
    "vit_b_16": _tv("vit_b_16"),
    "swin_t": _tv("swin_t"),
    "r3d_18": _video,
    "deeplabv3_mnv3": _deeplab,
    "bert_base": _lm("bert_base"),
    "gpt2": _lm("gpt2"),
    "llama2l": _lm("llama2l"),
    # More architectures (session 27): the families users bring that the zoo above lacks.
    "inception_v3": _tv("inception_v3", (BATCH, 3, 299, 299), init_weights=True, aux_logits=False),
    "googlenet": _tv("googlenet", init_weights=True, aux_logits=False),
    "mobilenet_v2": _tv("mobilenet_v2"),
    "mnasnet0_5": _tv("mnasnet0_5"),
    "resnext50_32x4d": _tv("resnext50_32x4d"),
    "efficientnet_v2_s": _tv("efficientnet_v2_s"),
    "regnet_x_400mf": _tv("regnet_x_400mf"),
    "maxvit_t": _tv("maxvit_t"),
    "swin_v2_t": _tv("swin_v2_t"),
    "vit_b_32": _tv("vit_b_32"),
    "alexnet": _tv("alexnet"),
    "vgg11_bn": _tv("vgg11_bn"),
    "r2plus1d_18": lambda: (__import__("torchvision").models.video.r2plus1d_18(),
                            (_image((BATCH, 3, 8, 112, 112)),)),
    "mc3_18": lambda: (__import__("torchvision").models.video.mc3_18(),
                       (_image((BATCH, 3, 8, 112, 112)),)),
    "s3d": lambda: (__import__("torchvision").models.video.s3d(),
                    (_image((BATCH, 3, 16, 112, 112)),)),
    "mvit_v2_s": lambda: (__import__("torchvision").models.video.mvit_v2_s(),
                          (_image((BATCH, 3, 16, 224, 224)),)),
    "lraspp_mnv3": lambda: (_Out(__import__("torchvision").models.segmentation
                                 .lraspp_mobilenet_v3_large(weights=None, weights_backbone=None),
                                 "out"), (_image((BATCH, 3, 224, 224)),)),
    "fcn_resnet50": lambda: (_Out(__import__("torchvision").models.segmentation
                                  .fcn_resnet50(weights=None, weights_backbone=None), "out"),
                             (_image((BATCH, 3, 224, 224)),)),
    "raft_small": lambda: (__import__("torchvision").models.optical_flow.raft_small(
        num_flow_updates=4), (_image((BATCH, 3, 128, 128)), _image((BATCH, 3, 128, 128), 2))),
    "gpt2_eager": _hf("GPT2Model", "GPT2Config", n_layer=2, n_embd=256, n_head=4,
                      attn_implementation="eager"),
    "gpt2_sdpa": _hf("GPT2Model", "GPT2Config", n_layer=2, n_embd=256, n_head=4),
    "t5_small": _hf("T5Model", "T5Config", inputs=("input_ids", "decoder_input_ids"),
                    vocab_size=8000, d_model=256, d_kv=64, d_ff=512, num_layers=2,
                    num_decoder_layers=2, num_heads=4),
    "bart_small": _hf("BartModel", "BartConfig", inputs=("input_ids", "decoder_input_ids"),
                      vocab_size=8000, d_model=256, encoder_layers=2, decoder_layers=2,
                      encoder_attention_heads=4, decoder_attention_heads=4,
                      encoder_ffn_dim=512, decoder_ffn_dim=512),
    "whisper_tiny": _hf("WhisperModel", "WhisperConfig",
                        inputs=("input_features", "decoder_input_ids"), vocab_size=8000,
                        num_mel_bins=80, d_model=256, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=4, decoder_attention_heads=4,
                        encoder_ffn_dim=512, decoder_ffn_dim=512, max_source_positions=64,
                        max_target_positions=64),
    "distilbert": _hf("DistilBertModel", "DistilBertConfig", vocab_size=8000, dim=256,
                      n_layers=2, n_heads=4, hidden_dim=512),
    "roberta": _hf("RobertaModel", "RobertaConfig", vocab_size=8000, hidden_size=256,
                   num_hidden_layers=2, num_attention_heads=4, intermediate_size=512),
    "albert": _hf("AlbertModel", "AlbertConfig", vocab_size=8000, embedding_size=128,
                  hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=512),
    "opt": _hf("OPTModel", "OPTConfig", vocab_size=8000, hidden_size=256, num_hidden_layers=2,
               ffn_dim=512, num_attention_heads=4, word_embed_proj_dim=256),
    "bloom": _hf("BloomModel", "BloomConfig", vocab_size=8000, hidden_size=256, n_layer=2,
                 n_head=4),
    "gpt_neox": _hf("GPTNeoXModel", "GPTNeoXConfig", rotary_pct=0.25, **_SMALL_LM),
    "mistral": _hf("MistralModel", "MistralConfig", num_key_value_heads=2, sliding_window=64,
                   **_SMALL_LM),
    "qwen2": _hf("Qwen2Model", "Qwen2Config", num_key_value_heads=2, **_SMALL_LM),
    "phi3": _hf("Phi3Model", "Phi3Config", num_key_value_heads=2, pad_token_id=0, **_SMALL_LM),
    "gemma": _hf("GemmaModel", "GemmaConfig", num_key_value_heads=1, head_dim=64, **_SMALL_LM),
    "clip_vision": _hf("CLIPVisionModel", "CLIPVisionConfig", inputs=("pixel_values",),
                       hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                       num_attention_heads=4, image_size=224, patch_size=32),
    "segformer": _hf("SegformerModel", "SegformerConfig", inputs=("pixel_values",),
                     hidden_sizes=[32, 64, 160, 256], depths=[1, 1, 1, 1]),
    "mobilevit": _hf("MobileViTModel", "MobileViTConfig", inputs=("pixel_values",),
                     image_size=256, hidden_sizes=[64, 80, 96], neck_hidden_sizes=[16, 32, 48,
                     48, 64, 80, 320]),
    "convnextv2": _hf("ConvNextV2Model", "ConvNextV2Config", inputs=("pixel_values",),
                      depths=[1, 1, 2, 1], hidden_sizes=[48, 96, 192, 384]),
    "deit": _hf("DeiTModel", "DeiTConfig", inputs=("pixel_values",), hidden_size=256,
                num_hidden_layers=2, num_attention_heads=4, intermediate_size=512),
    "dinov2": _hf("Dinov2Model", "Dinov2Config", inputs=("pixel_values",), hidden_size=256,
                  num_hidden_layers=2, num_attention_heads=4, image_size=224, patch_size=14),
}


def replace_weights(m):
    """Big float tensors of the module get regenerable values; returns {bytes digest: info}."""
    table = {}
    with torch.no_grad():
        for name, t in list(m.state_dict(keep_vars=True).items()):
            if not t.is_floating_point() or t.numel() < zoo_weights.MIN_ELEMENTS:
                continue
            x = t.detach().float()
            mean, std = float(x.mean()), float(x.std())
            if not (std > 0):
                std = 0.02
            seed = zlib.crc32(name.encode())
            v = torch.from_numpy(zoo_weights.generate(seed, t.numel(), mean, std)).view(t.shape)
            t.copy_(v.to(t.dtype))
            data = t.detach().contiguous().cpu().numpy().tobytes()
            table[zlib.crc32(data), len(data)] = dict(seed=seed, n=t.numel(), mean=mean, std=std,
                                                      param=name)
    return table


def slim(path, table):
    """Zeroes the entries that hold regenerated weights and deflates the archive."""
    entries, out = {}, path + ".tmp"
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if "/data/sample_inputs/" in "/" + info.filename:
                continue  # the example inputs: regenerable (NAME.weights.json "inputs")
            hit = table.get((zlib.crc32(data), len(data)))
            if hit is not None and zoo_weights.generate_bytes(hit) == data:
                entries[info.filename] = hit
                data = bytes(len(data))
            zi = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            zout.writestr(zi, data)
    os.replace(out, path)
    return entries


def export_one(outdir, name):
    from safetensors.torch import save_file
    torch.manual_seed(0)
    m, specs = MODELS[name]()
    m = m.eval()
    ins = tuple(torch.from_numpy(zoo_weights.generate_input(s)) for s in specs)
    table = replace_weights(m)
    t0 = time.time()
    with torch.no_grad():
        ep = torch.export.export(m, ins)
        out = m(*ins)
        torch.export.save(ep, f"{outdir}/{name}.pt2")
        torch.export.save(ep.run_decompositions(), f"{outdir}/{name}.core.pt2")
    save_file({"output_0": out.contiguous()}, f"{outdir}/{name}.out.safetensors")
    # Train mode: gradients of out.sum() (fxc --mode=train: output gradients of ones) for the
    # parameters small enough to stay in the archive (norm scales, biases: a few KB, and each
    # depends on the backward of everything after it), PyTorch's autograd on the CPU.
    m.zero_grad(set_to_none=True)
    m(*ins).sum().backward()
    grads = {f"grad.{k}": p.grad.detach().contiguous() for k, p in m.named_parameters()
             if p.grad is not None and p.numel() < zoo_weights.MIN_ELEMENTS}
    grads["output_0"] = out.contiguous()
    save_file(grads, f"{outdir}/{name}.grad.safetensors")
    meta = {"archives": {}, "inputs": list(specs)}
    for suffix in ("pt2", "core.pt2"):
        meta["archives"][suffix] = slim(f"{outdir}/{name}.{suffix}", table)
    with open(f"{outdir}/{name}.weights.json", "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    n = sum(len(v) for v in meta["archives"].values())
    print(f"{name} ok {time.time() - t0:.1f}s, {n} entries regenerable", flush=True)


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name in sys.argv[2:] or list(MODELS):
        try:
            export_one(outdir, name)
        except Exception as e:  # one model's failure is reported, the others go on
            print(f"{name} ERROR {type(e).__name__}: {str(e)[:500]}", flush=True)
            traceback.print_exc(limit=3)
            for f in os.listdir(outdir):  # no half-written (unslimmed) archives
                if f.startswith(name + "."):
                    os.remove(os.path.join(outdir, f))


if __name__ == "__main__":
    main()
