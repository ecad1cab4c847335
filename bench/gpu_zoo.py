#!/usr/bin/env python3
"""The zoo on the GPU machine, PyTorch's side, for bench/gpu_zoo.sh (which runs fxc and calls this).

  gpu_zoo.py model NAME BATCH RESDIR [--modes default,reduce-overhead] [--train-modes default]
                                     [--deadline UNIX_TIME] [--dtype f32|bf16]
      One process per model and batch. In order:
      1. builds the model (seed 0, float32, eval) and its example inputs on the CPU, exports it
         with torch.export and core ATen's run_decompositions(), and saves RESDIR/NAME_bBATCH.pt2
         and NAME_bBATCH.io.safetensors (input_<i>, and output_0 from CPU eager: fxc's --expect);
      2. on the GPU, compiles the module with torch.compile in each mode (inference under
         no_grad; the train step, forward then backward of out.sum() with the parameters and the
         float inputs requiring grad, on a copy of the module), warm-up calls included, and
         writes RESDIR/NAME_bBATCH.ready;
      3. waits for RESDIR/go (bench/gpu_zoo.sh makes it once every process is ready and fxc is
         timed: nothing compiles while anything is timed), then takes RESDIR/gpu.lock and times
         eager and each compiled variant with triton.testing.do_bench (median, L2 flushed
         between runs, as bench/anchors/torch_compare.py), one process at a time.
      Every step records its first error line instead of stopping the others; the results go to
      RESDIR/NAME_bBATCH.torch.json after each measurement.

  gpu_zoo.py table RESDIR --json OUT.json
      Combines RESDIR/*.torch.json and the fxc JSON files bench/gpu_zoo.sh wrote
      (NAME_bBATCH.fxc_<variant>.json / .err) into one JSON file and prints markdown tables.

PyTorch runs with its defaults: cuDNN convolutions may use TF32 (torch.backends.cudnn.allow_tf32
is True), float32 matmuls do not (torch.backends.cuda.matmul.allow_tf32 is False). With --dtype
bf16 every PyTorch variant (eager and compiled, inference and the train step's forward) runs under
torch.autocast("cuda", dtype=torch.bfloat16), and the export stays float32: fxc converts it the
same way with --dtype=bf16 (bench/gpu_zoo.sh passes it). Results are tagged NAME_bf16_bBATCH.
"""
import argparse, contextlib, copy, glob, json, os, re, sys, time, traceback

MODELS = ["resnet50", "mobilenet_v3_large", "vit_b_16", "efficientnet_b0", "convnext_tiny",
          "llama2l", "bert_base"]
SEQ = 128  # tokens per sequence for the language models


def first_line(e):
    s = f"{type(e).__name__}: {e}".strip()
    return s.splitlines()[0][:300] if s else type(e).__name__


def build(name, batch):
    """The model (eval, float32, seed 0) and its example inputs, on the CPU."""
    import torch
    torch.manual_seed(0)
    if name in ("resnet50", "mobilenet_v3_large", "vit_b_16", "efficientnet_b0", "convnext_tiny"):
        import torchvision
        m = getattr(torchvision.models, name)()
        return m.eval(), (torch.randn(batch, 3, 224, 224),)
    if name in ("llama2l", "bert_base"):
        import transformers

        class LastTensor(torch.nn.Module):  # returns one tensor, not a ModelOutput
            def __init__(self, m, field):
                super().__init__()
                self.m, self.field = m, field

            def forward(self, input_ids):
                return getattr(self.m(input_ids=input_ids, use_cache=False) if self.field == "logits"
                               else self.m(input_ids=input_ids), self.field)

        # Attention: transformers' default implementation (scaled_dot_product_attention).
        if name == "llama2l":  # a small decoder-only LLM: 2 layers, hidden 256, GQA, causal
            cfg = transformers.LlamaConfig(vocab_size=32000, hidden_size=256, intermediate_size=688,
                                           num_hidden_layers=2, num_attention_heads=4,
                                           num_key_value_heads=2, max_position_embeddings=512)
            m = LastTensor(transformers.LlamaForCausalLM(cfg), "logits")
            vocab = cfg.vocab_size
        else:  # BERT-base: 12 layers, hidden 768, no pooler
            cfg = transformers.BertConfig()
            m = LastTensor(transformers.BertModel(cfg, add_pooling_layer=False), "last_hidden_state")
            vocab = cfg.vocab_size
        ids = torch.randint(0, vocab, (batch, SEQ), generator=torch.Generator().manual_seed(1))
        return m.eval(), (ids,)
    raise SystemExit(f"unknown model {name}")


class Results:
    def __init__(self, path, **fields):
        self.path, self.d = path, dict(fields, errors={}, inference={}, train={})
        self.save()

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.d, f, indent=1)
        os.replace(tmp, self.path)

    def error(self, what, e):
        self.d["errors"][what] = first_line(e)
        print(f"[{self.d['model']} b{self.d['batch']}] {what} failed: {first_line(e)}", flush=True)
        if os.environ.get("ZOO_TRACEBACK"):
            traceback.print_exc()
        self.save()


def cmd_model(a):
    import torch
    torch.set_num_threads(2)  # many of these processes export at once
    tag = f"{a.name}{'_bf16' if a.dtype == 'bf16' else ''}_b{a.batch}"
    base = os.path.join(a.resdir, tag)
    r = Results(base + ".torch.json", model=a.name, batch=a.batch, dtype=a.dtype,
                torch=torch.__version__)
    # autocast as torch.autocast documents it: the forward under the context, backward outside.
    amp = ((lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if a.dtype == "bf16"
           else contextlib.nullcontext)
    try:
        m, ins = build(a.name, a.batch)
    except Exception as e:
        r.error("build", e)
        open(base + ".ready", "w").close()
        return
    # 1. export for fxc
    try:
        t0 = time.time()
        ep = torch.export.export(m, ins)
        # EXPORT=default keeps the export as torch.export writes it (scaled_dot_product_attention
        # whole, for fxc's fused attention); core (the default) runs core ATen's decompositions.
        if os.environ.get("EXPORT", "core") != "default":
            ep = ep.run_decompositions()
        torch.export.save(ep, base + ".pt2")
        r.d["export_s"] = round(time.time() - t0, 2)
        from safetensors.torch import save_file
        with torch.no_grad():
            ref = m(*ins)
        t = {f"input_{i}": x.contiguous() for i, x in enumerate(ins)}
        t["output_0"] = ref.contiguous()
        save_file(t, base + ".io.safetensors")
        if a.dtype == "bf16":
            # PyTorch's own autocast output on the GPU, and how far it is from float32: what a
            # bf16 rounding difference looks like for this model (fxc is checked against both).
            import copy
            mc = copy.deepcopy(m).cuda()
            with torch.no_grad(), amp():
                out = mc(*[x.cuda() for x in ins])
            r.d["autocast_max_abs_error"] = float((out.float().cpu() - ref.float()).abs().max())
            save_file({**{k: v for k, v in t.items() if k != "output_0"},
                       "output_0": out.float().cpu().contiguous()}, base + ".amp.safetensors")
            del mc
        r.save()
    except Exception as e:
        r.error("export", e)
    open(base + ".exported", "w").close()

    # 2. compile every variant (no timing yet)
    dev = "cuda"
    variants, train_variants = {}, {}
    try:
        m = m.to(dev)
        ins = tuple(x.to(dev) for x in ins)
        with torch.no_grad(), amp():
            m(*ins)
        variants["eager"] = m
    except Exception as e:
        r.error("eager", e)
    for mode in [x for x in a.modes.split(",") if x]:
        if "eager" not in variants:
            break
        try:
            t0 = time.time()
            cm = torch.compile(m, mode=None if mode == "default" else mode)
            with torch.no_grad(), amp():
                for _ in range(3):
                    cm(*ins)
            torch.cuda.synchronize()
            r.d["inference"][mode] = {"compile_s": round(time.time() - t0, 2)}
            variants[mode] = cm
            r.save()
        except Exception as e:
            r.error(f"torch.compile {mode}", e)
    tm = None
    if a.train_modes != "none" and "eager" in variants:
        try:
            tm = copy.deepcopy(m)
            tm.requires_grad_(True)
            tins = tuple(x.clone().requires_grad_(True) if x.is_floating_point() else x for x in ins)
            def step(f):
                def run():
                    with amp():
                        loss = f(*tins).float().sum()
                    loss.backward()
                return run
            step(tm)()
            train_variants["eager"] = step(tm)
        except Exception as e:
            r.error("eager train", e)
        for mode in [x for x in a.train_modes.split(",") if x]:
            if "eager" not in train_variants:
                break
            try:
                t0 = time.time()
                ctm = torch.compile(tm, mode=None if mode == "default" else mode)
                for _ in range(3):
                    step(ctm)()
                torch.cuda.synchronize()
                r.d["train"][mode] = {"compile_s": round(time.time() - t0, 2)}
                train_variants[mode] = step(ctm)
                r.save()
            except Exception as e:
                r.error(f"torch.compile {mode} train", e)
    open(base + ".ready", "w").close()

    # 3. time, one process at a time, once everything has compiled
    while not os.path.exists(os.path.join(a.resdir, "go")):
        if time.time() > a.deadline:
            r.error("timing", RuntimeError("no go before the deadline"))
            return
        time.sleep(0.25)
    import fcntl
    from triton.testing import do_bench
    with open(os.path.join(a.resdir, "gpu.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        t_lock = time.time()
        for mode, f in variants.items():
            try:
                with torch.no_grad(), amp():
                    ms = do_bench(lambda: f(*ins), warmup=50, rep=200, return_mode="median")
                r.d["inference"].setdefault(mode, {})["ms"] = ms
                r.save()
            except Exception as e:
                r.error(f"time {mode}", e)
        for mode, f in train_variants.items():
            try:
                ms = do_bench(f, warmup=50, rep=200, return_mode="median")
                r.d["train"].setdefault(mode, {})["ms"] = ms
                r.save()
            except Exception as e:
                r.error(f"time {mode} train", e)
        r.d["timing_s"] = round(time.time() - t_lock, 2)
        r.save()
    print(f"[{tag}] torch done: " + json.dumps({k: v.get("ms") for k, v in r.d["inference"].items()}),
          flush=True)


# ---------------------------------------------------------------- combining

FXC = [("fxc", "fxc"), ("fxc_fast", "fxc --allow-tf32")]
FXC_TRAIN = [("fxc_train", "fxc"), ("fxc_train_fast", "fxc --allow-tf32")]


def read_fxc(base, variant):
    """fxc's --bench --json result for one variant, or its first error line."""
    js, err = f"{base}.fxc_{variant}.json", f"{base}.fxc_{variant}.err"
    try:
        d = json.load(open(js))
        steps = sorted(d.get("steps", []), key=lambda s: -s.get("median_ms", 0))[:5]
        return {"ms": d["median_ms"], "p20_ms": d.get("p20_ms"), "p80_ms": d.get("p80_ms"),
                "compile_ms": d.get("compile_ms"), "tflops": d.get("tflops"),
                "steps": len(d.get("steps", [])),
                "top_steps": [{k: s.get(k) for k in ("kind", "name", "median_ms")} for s in steps]}
    except Exception:
        pass
    if not os.path.exists(err) and not os.path.exists(js):
        return None  # not run (skipped)
    lines = [l.strip() for l in open(err, errors="replace")] if os.path.exists(err) else []
    # An exception that escaped: its what() line says more than "terminate called ...".
    bad = [l for l in lines if "what():" in l]
    bad += [l for l in lines if "error" in l.lower() or "fail" in l.lower() or "exception" in l.lower()]
    return {"error": (bad or lines or ["no output"])[0][:300]}


def fmt(x, digits=3):
    if x is None:
        return "—"
    return f"{x:.{digits}f}" if x < 100 else f"{x:.1f}"


def cell(entry):
    if entry is None:
        return "not run"
    if "ms" in entry and entry["ms"] is not None:
        return fmt(entry["ms"])
    return "fails" if entry.get("error") or entry.get("compile_s") is None else "not timed"


def tcell(entries, errors, mode, train):
    """A PyTorch cell: ms, or 'fails' when its compile or timing failed."""
    suffix = " train" if train else ""
    what = "eager" if mode == "eager" else f"torch.compile {mode}"
    if f"{what}{suffix}" in errors or f"time {mode}{suffix}" in errors:
        return "fails"
    return cell(entries.get(mode))


def ratio(fxc_ms, best_ms):
    if fxc_ms is None or best_ms is None:
        return "—"
    return f"{best_ms / fxc_ms:.2f}x faster" if fxc_ms <= best_ms else f"{fxc_ms / best_ms:.2f}x slower"


def cmd_table(a):
    rows, failures = [], []
    order = {m: i for i, m in enumerate(MODELS)}
    files = sorted(glob.glob(os.path.join(a.resdir, "*.torch.json")),
                   key=lambda p: (int(p.rsplit("_b", 1)[1].split(".")[0]),
                                  order.get(os.path.basename(p).rsplit("_b", 1)[0], 99)))
    for p in files:
        t = json.load(open(p))
        base = p[: -len(".torch.json")]
        row = {"model": t["model"], "batch": t["batch"], "dtype": t.get("dtype", "f32"),
               "export_s": t.get("export_s"),
               "torch": {"inference": t.get("inference", {}), "train": t.get("train", {})},
               "torch_errors": t.get("errors", {}), "fxc": {}}
        for v, _ in FXC + FXC_TRAIN:
            row["fxc"][v] = read_fxc(base, v)
        chk = base + ".fxc_check.err"
        if os.path.exists(chk):
            txt = open(chk, errors="replace").read()
            rc = open(base + ".fxc_check.rc").read().strip() if os.path.exists(base + ".fxc_check.rc") else "?"
            lines = txt.strip().splitlines()
            errs = [l for l in lines if "error:" in l]
            row["fxc_check"] = {"rc": rc, "tail": lines[-3:],
                                "failed": bool(errs) and "MISMATCH" not in txt,
                                "first_error": errs[0][:300] if errs else None}
            errs = re.findall(r"max abs error ([0-9.e+-]+)", txt)
            if errs:
                row["fxc_check"]["max_abs_error"] = max(float(x) for x in errs)
        rows.append(row)
        for what, e in t.get("errors", {}).items():
            failures.append(f"{t['model']} b{t['batch']}: PyTorch {what}: {e}")
        for v, label in FXC + FXC_TRAIN:
            e = row["fxc"][v]
            if e and "error" in e:
                mode = " --mode=train" if "train" in v else ""
                failures.append(f"{t['model']} b{t['batch']}: `{label}{mode}`: {e['error']}")
        if row.get("fxc_check") and row["fxc_check"]["rc"] != "0":
            failures.append(f"{t['model']} b{t['batch']}: fxc --run --expect (vs CPU eager float32; rtol/atol 2e-3, bf16 5e-2): "
                            + (row["fxc_check"]["first_error"] or " / ".join(row["fxc_check"]["tail"]))[:300])

    def ms(d, k):
        e = d.get(k)
        return e.get("ms") if isinstance(e, dict) else None

    out = ["Inference (ms, medians; PyTorch: do_bench with L2 flushed; fxc: --bench, CUDA events, 256 MiB flush):", "",
           "| model | batch | dtype | fxc | fxc --allow-tf32 | eager | torch.compile | reduce-overhead | max-autotune | fxc vs best PyTorch | fastest fxc vs best PyTorch | fxc output vs CPU eager |",
           "|---|---:|---|---:|---:|---:|---:|---:|---:|---|---|---|"]
    for r in rows:
        ti = r["torch"]["inference"]
        tc = lambda d, mode, train=False: tcell(d, r["torch_errors"], mode, train)
        best = [x for x in (ms(ti, k) for k in ("eager", "default", "reduce-overhead", "max-autotune")) if x]
        best = min(best) if best else None
        f, ff = ms(r["fxc"], "fxc"), ms(r["fxc"], "fxc_fast")
        fastest = min([x for x in (f, ff) if x is not None], default=None)
        chk = r.get("fxc_check")
        failed = bool(chk and chk.get("failed"))
        if chk and chk["rc"] == "0" and "max_abs_error" in chk:
            chk = dict(chk, note=f"matches (max abs error {chk['max_abs_error']:.2g})")
        chk = "—" if not chk else (chk.get("note", "matches") if chk["rc"] == "0" else "fails" if failed
                                   else "MISMATCH" if chk["rc"] == "1" else f"exit {chk['rc']}")
        out.append(f"| {r['model']} | {r['batch']} | {r['dtype']} | {cell(r['fxc']['fxc'])} | {cell(r['fxc']['fxc_fast'])} | "
                   f"{tc(ti, 'eager')} | {tc(ti, 'default')} | {tc(ti, 'reduce-overhead')} | "
                   f"{tc(ti, 'max-autotune')} | {ratio(f, best)} | {ratio(fastest, best)} | {chk} |")
    has_train = any(r["torch"]["train"] or any(r["fxc"].get(v) for v, _ in FXC_TRAIN) for r in rows)
    train_rows = rows if has_train else []
    out += ["", "Train step (forward + backward of out.sum(), ms):" if has_train else "Train step: not run.", "",
            "| model | batch | dtype | fxc --mode=train | fxc --mode=train --allow-tf32 | eager | torch.compile | reduce-overhead | fxc vs best PyTorch | fastest fxc vs best PyTorch |",
            "|---|---:|---|---:|---:|---:|---:|---:|---|---|"]
    if not has_train:
        out = out[:-3]
    for r in train_rows:
        tt = r["torch"]["train"]
        tc = lambda d, mode, train=False: tcell(d, r["torch_errors"], mode, train)
        best = [x for x in (ms(tt, k) for k in ("eager", "default", "reduce-overhead", "max-autotune")) if x]
        best = min(best) if best else None
        f, ff = ms(r["fxc"], "fxc_train"), ms(r["fxc"], "fxc_train_fast")
        fastest = min([x for x in (f, ff) if x is not None], default=None)
        out.append(f"| {r['model']} | {r['batch']} | {r['dtype']} | {cell(r['fxc']['fxc_train'])} | {cell(r['fxc']['fxc_train_fast'])} | "
                   f"{tc(tt, 'eager', True)} | {tc(tt, 'default', True)} | {tc(tt, 'reduce-overhead', True)} | "
                   f"{ratio(f, best)} | {ratio(fastest, best)} |")
    out += ["", "fxc's slowest steps (default flags, inference; ms):", ""]
    for r in rows:
        e = r["fxc"].get("fxc")
        if e and e.get("top_steps"):
            out.append(f"- {r['model']} b{r['batch']} ({e['steps']} steps, compile {fmt((e.get('compile_ms') or 0) / 1000, 2)} s): "
                       + ", ".join(f"{s['name']} {fmt(s['median_ms'])}" for s in e["top_steps"]))
    out += ["", "Failures (first error line):", ""] + ([f"- {x}" for x in failures] or ["- none"])
    print("\n".join(out))
    if a.json:
        json.dump({"rows": rows, "failures": failures}, open(a.json, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("model")
    p.add_argument("name")
    p.add_argument("batch", type=int)
    p.add_argument("resdir")
    p.add_argument("--modes", default="default,reduce-overhead")
    p.add_argument("--train-modes", default="default")
    p.add_argument("--deadline", type=float, default=time.time() + 3600)
    p.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    p = sub.add_parser("table")
    p.add_argument("resdir")
    p.add_argument("--json")
    a = ap.parse_args()
    (cmd_model if a.cmd == "model" else cmd_table)(a)


if __name__ == "__main__":
    main()
