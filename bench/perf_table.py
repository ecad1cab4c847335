#!/usr/bin/env python3
"""Formats bench/gpu_anchor.sh's results as docs/perf.md's Markdown tables.

  perf_table.py --combine DIR --out anchor.json   read DIR's result files, write them as one JSON
                                                  file, print the tables
  perf_table.py anchor.json                       print the tables of a combined file

DIR holds fxc_<case>_<dtype>.json (fxc --bench --json), fxctuned_<case>_<dtype>.json (the same
with --max-autotune), fxcfix_<fixture>.json, seed_<dtype>.json
(seed_models.py --json), torch_fixtures.json (torch_compare.py --json), copy.json (copy_bw.py),
and a .err file beside each fxc result (its stderr, kept when the result is missing).
"""
import argparse, glob, json, os


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        err = os.path.splitext(path)[0] + ".err"
        text = open(err).read().strip() if os.path.exists(err) else str(e)
        return {"error": text[-400:] or "no output"}


def combine(d):
    out = {"fxc": {}, "fxc_tuned": {}, "fxc_fixtures": {}, "seed": {}, "torch_fixtures": None,
           "copy": None}
    for p in sorted(glob.glob(os.path.join(d, "fxc_*.json"))):
        out["fxc"][os.path.basename(p)[4:-5]] = load(p)        # "mlp_train_f32"
    for p in sorted(glob.glob(os.path.join(d, "fxctuned_*.json"))):
        out["fxc_tuned"][os.path.basename(p)[9:-5]] = load(p)
    for p in sorted(glob.glob(os.path.join(d, "fxcfix_*.json"))):
        out["fxc_fixtures"][os.path.basename(p)[7:-5]] = load(p)
    for p in sorted(glob.glob(os.path.join(d, "seed_*.json"))):
        out["seed"][os.path.basename(p)[5:-5]] = load(p)
    for key, name in [("torch_fixtures", "torch_fixtures.json"), ("copy", "copy.json")]:
        if os.path.exists(os.path.join(d, name)):
            out[key] = load(os.path.join(d, name))
    return out


def f(v, fmt="{:.4f}"):
    return "—" if v is None else fmt.format(v)


def ratio(fxc, best):
    if fxc is None or best is None or fxc <= 0 or best <= 0:
        return "—"
    return f"{best / fxc:.2f}x faster" if fxc < best else f"{fxc / best:.2f}x slower"


def fxc_cells(j):
    if j is None:
        return ["not run"] + ["—"] * 4, None
    if "error" in j:
        first = next((l for l in j["error"].splitlines() if l.strip()), "no output")
        return ["error: " + first[:100].replace("|", "/")] + ["—"] * 4, None
    med = j["median_ms"]
    cells = [f"{med:.4f} ({j['p20_ms']:.4f}–{j['p80_ms']:.4f})", f"{j['compile_ms'] / 1000:.2f}",
             None, f"{j['gbps']:.0f}", f"{j['tflops']:.1f}" if j["flops"] else "—"]
    return cells, med


def tables(a):
    lines = []
    seed_rows = {}
    gpu = torch_v = None
    for dt, s in a["seed"].items():
        if "rows" in s:
            gpu, torch_v = s.get("gpu"), s.get("torch")
            for r in s["rows"]:
                seed_rows[(r["case"], dt)] = r
    lines.append(f"GPU: {gpu or '?'}; PyTorch {torch_v or '?'}. Times in ms, median of CUDA-event "
                 "timings with L2 flushed (fxc: p20–p80 in brackets).\n")
    lines.append("| case | dtype | PyTorch eager | torch.compile | torch.compile cold compile (s) | "
                 "fxc | fxc compile (s) | fxc vs best PyTorch | fxc GB/s | fxc TFLOP/s | "
                 "fxc --max-autotune | its compile + tuning (s) | tuned vs best PyTorch |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    keys = sorted({k for k in a["fxc"]} | {f"{c}_{d}" for c, d in seed_rows},
                  key=lambda k: (k.rsplit("_", 1)[0], k.rsplit("_", 1)[1]))
    for k in keys:
        case, dt = k.rsplit("_", 1)
        r = seed_rows.get((case, dt), {})
        cells, med = fxc_cells(a["fxc"].get(k))
        e, i = r.get("eager_ms"), r.get("inductor_ms")
        best = min(v for v in (e, i) if v is not None) if (e or i) else None
        cells[2] = ratio(med, best)
        tuned, tmed = fxc_cells(a.get("fxc_tuned", {}).get(k))
        cells += [tuned[0], tuned[1], ratio(tmed, best)]
        lines.append(f"| {case} | {dt} | {f(e)} | {f(i)} | {f(r.get('inductor_compile_s'), '{:.2f}')} | "
                     + " | ".join(cells) + " |")
    copy = {r["dtype"]: r for r in (a.get("copy") or {}).get("rows", [])}
    norms = [(d, a["fxc"].get(f"norms_{d}")) for d in ("f32", "bf16")]
    if copy and any(j and "error" not in j for _, j in norms):
        lines.append("\nnorms against the memory floor (one read of x and one write of the result at "
                     "device-to-device copy bandwidth):\n")
        lines.append("| dtype | floor bytes | copy GB/s | floor (ms) | fxc (ms) | fxc, % of copy "
                     "bandwidth | fxc --max-autotune (ms) | tuned, % | torch.compile (ms) | "
                     "torch.compile, % |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        pct = lambda floor, ms: "—" if not ms else f"{100 * floor / ms:.0f}%"
        for d, j in norms:
            if not j or "error" in j or d not in copy:
                continue
            c = copy[d]
            floor_ms = c["bytes"] / (c["copy_GBps"] * 1e6)
            ind = seed_rows.get(("norms", d), {}).get("inductor_ms")
            t = a.get("fxc_tuned", {}).get(f"norms_{d}") or {}
            tms = t.get("median_ms")
            lines.append(f"| {d} | {c['bytes']} | {c['copy_GBps']:.0f} | {floor_ms:.4f} | "
                         f"{j['median_ms']:.4f} | {pct(floor_ms, j['median_ms'])} | {f(tms)} | "
                         f"{pct(floor_ms, tms)} | {f(ind)} | {pct(floor_ms, ind)} |")
    tf = {r["graph"]: r for r in (a.get("torch_fixtures") or {}).get("rows", [])}
    if a["fxc_fixtures"] or tf:
        lines.append("\nFixtures (test/fixtures, float32, inputs from each .io.safetensors):\n")
        lines.append("| graph | PyTorch eager | torch.compile | torch.compile cold compile (s) | fxc | "
                     "fxc compile (s) | fxc vs best PyTorch | fxc GB/s | fxc TFLOP/s |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name in sorted(set(a["fxc_fixtures"]) | {g[:-4] for g in tf}):
            r = tf.get(name + ".pt2", {})
            cells, med = fxc_cells(a["fxc_fixtures"].get(name))
            e, i = r.get("eager_ms"), r.get("inductor_ms")
            best = min(v for v in (e, i) if v is not None) if (e or i) else None
            cells[2] = ratio(med, best)
            lines.append(f"| {name}.pt2 | {f(e)} | {f(i)} | {f(r.get('inductor_compile_s'), '{:.2f}')} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("combined", nargs="?")
    ap.add_argument("--combine")
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.combine:
        data = combine(a.combine)
        if a.out:
            with open(a.out, "w") as fo:
                json.dump(data, fo, indent=1)
    elif a.combined:
        data = json.load(open(a.combined))
    else:
        ap.error("give a combined anchor.json or --combine DIR")
    print(tables(data), end="")


if __name__ == "__main__":
    main()
