#!/usr/bin/env bash
# --report and --compare end to end, checked in a real browser: reports of the MLP (--bench,
# with --compare against an edited copy of another trace), the block in train mode, a bisect
# run, a minify run and a CUDA cross-compile (PTX, ptxas figures when ptxas is present). Every
# page is loaded headless in Debian's chromium: no console errors, every link's file and anchor
# exist, the expected elements are in the DOM; the index's screenshot is kept in
# <build>/test-artifacts/report-index.png. Two reports of one run are byte-identical but for
# the measured times. chromium missing is a failure (tools/install-deps.sh installs it).
# Usage: report.sh <fxc>
set -u
fxc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
artifacts=$(dirname "$fxc")/test-artifacts
mkdir -p "$artifacts"
export FXC_CACHE_DIR=$tmp/cache

chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
  bad "chromium is not installed (tools/install-deps.sh installs it); the report cannot be checked"
  exit 1
fi
chrome() { # chrome <dom out> <err out> <url> [flags...]: one headless page load, 60 s at most
  local dom=$1 err=$2 url=$3; shift 3
  timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions \
    --disable-background-networking --disable-sync --disable-component-update \
    --user-data-dir="$(mktemp -d "$tmp/profile.XXXXXX")" --enable-logging=stderr --v=0 "$@" "$url" \
    >"$dom" 2>"$err"
}
console_errors() { # the page's console messages (the report's pages have no script: all are errors)
  grep -E 'CONSOLE|Uncaught|ERR_FILE_NOT_FOUND|Failed to load' "$1" || true
}

# The checker itself: a page with a script error and a broken link must be caught.
mkdir -p "$tmp/canary"
printf '<!DOCTYPE html><html><body><a href="missing.html">x</a><a href="#nowhere">y</a><script>undefined_fn();</script></body></html>\n' >"$tmp/canary/index.html"
mkdir -p "$tmp/dom"
chrome "$tmp/dom/canary_index.html" "$tmp/canary/err" "file://$tmp/canary/index.html" --dump-dom
[ -n "$(console_errors "$tmp/canary/err")" ] && ok "the console check sees a script error" ||
  bad "chromium printed no console error for a failing script" "$(tail -5 "$tmp/canary/err")"

# The reports.
check "report of the MLP with --bench and --debug-dir" 0 "$fxc" --device=cpu --bench \
  --debug-dir="$tmp/d1" --report="$tmp/r0" "$fx/mlp.pt2"
has "the report's path is printed" "$tmp/err" "fxc: report written to $tmp/r0/index.html"
[ -n "$(ls -d "$tmp"/d1/run_* 2>/dev/null)" ] && ok "--debug-dir keeps its trace" || bad "--debug-dir lost its trace"
# --compare's other trace: a copy of that one with two kernels fused and renamed, a step slower.
cp -r "$(ls -d "$tmp"/d1/run_* | head -n 1)" "$tmp/other"
python3 - "$tmp/other" <<'PY' || bad "cannot edit the other trace"
import glob, json, re, sys
root = sys.argv[1]
post = sorted(glob.glob(root + "/inductor/*/ir_post_fusion.txt"))[0]
lines = open(post).read().split("\n")
# Before: the first kernel had another name, and the second kernel's buffers were fused into it
# (its header and the extern call before it gone).
kernels = [i for i, l in enumerate(lines) if l.startswith("kernel ")]
assert len(kernels) >= 2, "fewer than two kernels"
lines[kernels[0]] = "kernel fused_old_9:" + lines[kernels[0]].split(":", 1)[1]
drop = {kernels[1]} | ({kernels[1] - 1} if lines[kernels[1] - 1].startswith("extern ") else set())
open(post, "w").write("\n".join(l for i, l in enumerate(lines) if i not in drop))
b = json.load(open(root + "/fxc/bench.json"))
b["steps"][0]["median_ms"] = 1e6  # 1000 s: this run's step takes 100.0% less
b["median_ms"] = 1e6
json.dump(b, open(root + "/fxc/bench.json", "w"))
PY
check "report of the MLP with --bench --compare" 0 "$fxc" --device=cpu --bench --report="$tmp/r1" \
  --compare="$tmp/other" "$fx/mlp.pt2"
check "report of the block in train mode" 0 "$fxc" --device=cpu --mode=train --run \
  --expect "$fx/block.grad.safetensors" --inputs "$fx/block.io.safetensors" --report="$tmp/r2" "$fx/block.pt2"
check "report of a bisect run" 1 "$fxc" --device=cpu --bisect --inject-bug=relu:accuracy \
  --report="$tmp/r3" "$fx/mlp.pt2"
# (of a graph whose name needs escaping in HTML and percent-encoding in links)
weird="$tmp/m l#p%<&>.pt2"
cp "$fx/mlp.pt2" "$weird"
check "report of a CUDA cross-compile" 0 "$fxc" --device=cuda --emit=ptx -o "$tmp/mlp.ptx" \
  --report="$tmp/r4" "$weird"
check "report of a minify run" 1 "$fxc" --device=cpu --minify --inject-bug=relu:accuracy \
  --report="$tmp/r6" "$fx/mlp.pt2"
has "the minifier writes into the report" "$tmp/out" "wrote $tmp/r6/minifier/repro.fxg"
[ -z "$(ls -d "$tmp"/r*/run_* 2>/dev/null)" ] && ok "no run folder left beside the reports' trace/" ||
  bad "a report keeps its run folder" "$(ls -d "$tmp"/r*/run_*)"
[ -s "$tmp/r1/trace.json" ] && python3 -c "import json,sys; json.load(open(sys.argv[1]))['traceEvents']" "$tmp/r1/trace.json" &&
  ok "the Chrome trace is written and parses" || bad "no Chrome trace in the report"

# Usage errors and a bad --compare.
# Recompiles and fallbacks with their reasons (these indexes are not loaded in the browser).
python3 - "$tmp/x32.safetensors" <<'PY'
import json, struct, sys
data = struct.pack("<%df" % (32 * 256), *[((i * 37) % 101) / 50.0 - 1.0 for i in range(32 * 256)])
hdr = json.dumps({"input_0": {"dtype": "F32", "shape": [32, 256], "data_offsets": [0, len(data)]}}).encode()
hdr += b" " * ((8 - len(hdr) % 8) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(hdr)) + hdr + data)
PY
check "report of a run that recompiles" 0 "$fxc" --device=cpu --run --inputs "$tmp/x32.safetensors" \
  --report="$tmp/r8" "$fx/mlp.pt2"
has "the index gives the recompile's reason" "$tmp/r8/index.html" \
  "recompiling mlp because the guards failed: input_0 &#39;x&#39;: expected f32[64, 256], got f32[32, 256]"
check "report of a graph with a fallback" 0 "$fxc" --device=cpu --run --report="$tmp/r9" "$src/test/graphs/fallback.fxg"
has "the index gives the fallback's reason" "$tmp/r9/index.html" \
  "fallback__0_inference_0.0: fallback aten.linalg_matrix_exp.default: no inductor lowering"
has "the index gives the perf hint" "$tmp/r9/index.html" "aten.linalg_matrix_exp.default runs as an unfused fallback"
has "the index gives the cache decision" "$tmp/r9/index.html" "compile cache not looked up (a debug trace needs the compile to run)"
FXC_REPRO_LEVEL=1 check "a failing run's repro (FXC_REPRO_LEVEL=1)" 1 "$fxc" --device=cpu --run \
  --inject-bug=relu:runtime_error --report="$tmp/r10" "$fx/mlp.pt2"
[ -s "$tmp/r10/minifier/repro.fxg" ] && grep -q 'href="minifier/repro.fxg"' "$tmp/r10/index.html" &&
  ok "the repro FXC_REPRO_LEVEL writes stays in the report, linked" || bad "the report lost or did not link the repro"
check "compile the MLP to an artifact" 0 "$fxc" --device=cpu -o "$tmp/mlp.fxo" "$fx/mlp.pt2"
check "report of an artifact's run" 0 "$fxc" --run --report="$tmp/r7" "$tmp/mlp.fxo"
has "an artifact's report says nothing was compiled" "$tmp/r7/index.html" "an artifact holds its compiled plan"
has "an artifact's report names the action" "$tmp/r7/index.html" "run of an artifact"

check "--debug-dir inside the report's trace/" 2 "$fxc" --device=cpu --run --report="$tmp/r7" \
  --debug-dir="$tmp/r7/trace/d" "$fx/mlp.pt2"
has "--debug-dir inside trace/ is refused" "$tmp/err" "is inside the report's trace/ folder, which --report replaces"
check "--compare without --report" 2 "$fxc" --compare="$tmp/other" "$fx/mlp.pt2"
has "--compare needs --report" "$tmp/err" "--compare needs --report=<dir>"
check "--compare of a folder without a trace" 1 "$fxc" --device=cpu --report="$tmp/r5" --compare="$tmp/canary" -o "$tmp/r5.fxo" "$fx/mlp.pt2"
[ ! -e "$tmp/r5.fxo" ] && ok "a bad --compare fails before compiling" || bad "a bad --compare compiled first"
has "--compare names the folder" "$tmp/err" "$tmp/canary: error: --compare: no debug trace here"

# Determinism: the graph pages of the same run twice are byte-identical; the index differs only
# in numbers (measured times) and the report's own name.
check "the block in train mode again" 0 "$fxc" --device=cpu --mode=train --run \
  --expect "$fx/block.grad.safetensors" --inputs "$fx/block.io.safetensors" --report="$tmp/r2b" "$fx/block.pt2"
for p in "$tmp"/r2/graphs/*.html; do same "graph page $(basename "$p") is deterministic" "$p" "$tmp/r2b/graphs/$(basename "$p")"; done
mask() { sed -E -e 's/r2b/r2/g' -e 's/[0-9]+(\.[0-9]+)?//g' "$1"; }
[ "$(mask "$tmp/r2/index.html")" = "$(mask "$tmp/r2b/index.html")" ] && ok "the index differs only in measured numbers" ||
  bad "index.html differs beyond numbers" "$(diff <(mask "$tmp/r2/index.html") <(mask "$tmp/r2b/index.html") | head)"

# Every page in the browser: console, links, anchors, expected elements.
pages=()
for r in r1 r2 r3 r4 r6; do
  while IFS= read -r p; do pages+=("$p"); done < <(cd "$tmp" && find "$r" -name '*.html' ! -path '*/trace/*' | sort)
done
[ ${#pages[@]} -ge 8 ] && ok "${#pages[@]} pages to load" || bad "only ${#pages[@]} pages: ${pages[*]}"
export -f chrome
export chromium tmp
file_url() { python3 -c 'import sys, urllib.parse; print("file://" + urllib.parse.quote(sys.argv[1]))' "$1"; }
export -f file_url
# Four pages at a time: chromium spends most of a load waiting.
printf '%s\0' "${pages[@]}" | xargs -0 -P 4 -n 1 bash -c 'f=$(echo "$1" | tr / _); chrome "$tmp/dom/$f" "$tmp/dom/$f.err" "$(file_url "$tmp/$1")" --dump-dom' _
for p in "${pages[@]}"; do
  f=$(echo "$p" | tr / _)
  e=$(console_errors "$tmp/dom/$f.err")
  if [ ! -s "$tmp/dom/$f" ]; then bad "$p: chromium dumped no DOM" "$(tail -5 "$tmp/dom/$f.err")"
  elif [ -n "$e" ]; then bad "$p: console errors" "$e"
  else ok "$p loads without console errors"; fi
done
python3 - "$tmp" canary/index.html "${pages[@]}" <<'PY' || fail=1
import os, re, sys
from html.parser import HTMLParser
from urllib.parse import unquote
tmp, pages = sys.argv[1], sys.argv[2:]
class Page(HTMLParser):
    def __init__(self):
        super().__init__(); self.ids, self.hrefs, self.tags, self.text = set(), [], [], []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs); self.tags.append((tag, a))
        if "id" in a: self.ids.add(a["id"])
        for k in ("href", "src"):
            if a.get(k) is not None: self.hrefs.append(a[k])
    def handle_data(self, d): self.text.append(d)
def dom_ids_of(p):  # the ids of a page chromium did not load (parsed from the file)
    x = Page(); x.feed(open(os.path.join(tmp, p), encoding="utf-8").read()); return x.ids
def dom(p):  # the DOM chromium dumped, parsed
    x = Page(); x.feed(open(os.path.join(tmp, "dom", p.replace("/", "_")), encoding="utf-8").read()); return x
doms = {p: dom(p) for p in pages}
failed = False
def say(ok, what):
    global failed
    print(("ok   " if ok else "FAIL ") + what); failed |= not ok
for p, d in doms.items():
    broken = []
    for h in d.hrefs:
        if re.match(r"^(https?|mailto):", h): continue
        path, _, frag = h.partition("#")
        target = os.path.normpath(os.path.join(os.path.dirname(p), unquote(path))) if path else p
        if not os.path.exists(os.path.join(tmp, target)): broken.append(h); continue
        if frag:
            ids = doms[target].ids if target in doms else dom_ids_of(target)
            if unquote(frag) not in ids: broken.append(h)
    if p.startswith("canary/"):
        say(sorted(broken) == ["#nowhere", "missing.html"], "the link check sees the canary's broken link and anchor: %s" % broken)
        continue
    say(not broken, "%s: %d links, none broken%s" % (p, len(d.hrefs), (": " + ", ".join(broken[:5])) if broken else ""))
def text(p): return "".join(doms[p].text)
def has_id(p, i): return i in doms[p].ids
def tags(p, tag, cls=None): return [a for t, a in doms[p].tags if t == tag and (cls is None or cls in a.get("class", "").split())]
# The MLP's index: graphs, the compile-time chart, bench chart with GB/s and share of peak,
# cache, guards, compare link, Chrome trace link.
i1 = "r1/index.html"
for sec in ("graphs", "compile-time", "bench", "cache", "guards", "recompiles", "fallbacks", "perf-hints", "files"):
    say(has_id(i1, sec), "MLP index has section #" + sec)
say(len(tags(i1, "svg", "chart")) == 2, "MLP index has two charts (compile time, run time per step)")
say("% of peak" in text(i1) and "GB/s" in text(i1), "MLP index gives GB/s and the share of peak bandwidth")
say("input_0 'x': dtype f32" in text(i1), "MLP index lists the guards")
say(any(a.get("href") == "compare.html" for a in tags(i1, "a")), "MLP index links compare.html")
say(any(a.get("href") == "trace.json" for a in tags(i1, "a")), "MLP index links the Chrome trace")
say("compile cache" in text(i1), "MLP index reports the compile cache decision")
# A graph page: FX graph with anchors, kernels with their nodes, provenance both ways, IR, code.
g1 = [p for p in pages if p.startswith("r1/graphs/")]
say(len(g1) == 1, "MLP report has one graph page")
for g in g1:
    for sec in ("fx-graph", "fx-transformed", "kernels", "ir-pre", "ir-post", "output-code"):
        say(has_id(g, sec), g + " has section #" + sec)
    rows = [a for t, a in doms[g].tags if t == "tr" and a.get("id", "").startswith("kernel-")]
    say(len(rows) >= 1, g + ": %d kernel rows" % len(rows))
    back = {a["href"][1:] for a in tags(g, "a", "prov") if a.get("href", "").startswith("#kernel-")}
    say(all(r["id"] in back for r in rows), g + ": every kernel is linked from an FX node (node -> kernel)")
    say(len([a for a in tags(g, "a") if a.get("href", "").startswith("#t-")]) >= len(rows), g + ": kernels link their FX nodes (kernel -> node)")
    say(len(tags(g, "span", "kw")) > 5 and len(tags(g, "span", "cm")) > 0, g + ": output_code.cpp is highlighted")
    say(len(tags(g, "div", "kb")) >= len(rows), g + ": the post-fusion IR shows kernel boundaries")
    say("LLVM IR" in text(g), g + ": kernels' LLVM IR")
# The block in train mode: forward and backward pages, the joint graph.
g2 = sorted(p for p in pages if p.startswith("r2/graphs/"))
say(len(g2) == 2 and "forward" in g2[1] and "backward" in g2[0], "block train report has forward and backward pages: %s" % g2)
for g in g2: say(has_id(g, "aot") and "===== joint graph =====" in text(g) and "tangents_1" in text(g), g + " shows AOT autograd's joint graph")
say("train" in text("r2/index.html"), "block index says mode train")
# The bisect run.
say(has_id("r3/index.html", "failure-tools") and "first failing stage: inductor" in text("r3/index.html"), "bisect result in the report")
say("minified to 1 node" in text("r6/index.html") and any(a.get("href") == "minifier/repro.fxg" for a in tags("r6/index.html", "a")),
    "minify result and repro files in the report")
# CUDA: PTX per kernel, ptxas figures when ptxas is found.
g4 = [p for p in pages if p.startswith("r4/graphs/")]
say(len(g4) == 1 and "PTX" in text(g4[0]), "CUDA report shows PTX")
say("m l#p%<&>.pt2" in text("r4/index.html"), "a graph's odd name is shown as it is")
ptxas = any(os.access(os.path.join(d, "ptxas"), os.X_OK) for d in os.environ.get("PATH", "").split(":") + ["/usr/local/cuda/bin"])
if ptxas: say("ptxas: registers" in text(g4[0]), "CUDA report gives ptxas's registers and spills")
else: print("ok   ptxas not found: no register figures expected")
# compare.html: the split kernel is removed, the fusion decision changed, the slower step shows.
c = "r1/compare.html"
say(c in doms, "compare.html is written")
if c in doms:
    t = text(c)
    say("fused_old_9" in t and "2 added, 1 removed" in t, "compare: kernels added and removed")
    say(re.search(r"[1-9]\d* FX nodes share their kernel", t) is not None, "compare: fusion decisions changed")
    say("-100.0%" in t, "compare: the step that took 1000 s before shows -100.0%")
sys.exit(1 if failed else 0)
PY

# The index's screenshot, a test artifact.
rm -f "$artifacts/report-index.png"
chrome "$tmp/shot.out" "$tmp/shot.err" "file://$tmp/r1/index.html" --screenshot="$artifacts/report-index.png" --window-size=1280,2000 --hide-scrollbars
if [ -s "$artifacts/report-index.png" ] && [ "$(head -c 8 "$artifacts/report-index.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
  ok "screenshot of the index: $artifacts/report-index.png"
else bad "no screenshot of the index" "$(tail -5 "$tmp/shot.err")"; fi
exit $fail
