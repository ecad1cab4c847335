#!/usr/bin/env bash
# --bench --json, --time-passes and --trace on the CPU (docs/design.md §6): the JSON report's fields
# and invariants (percentiles ordered, per-step rows, the matmuls' flops), the pass timing report,
# and the Chrome trace (valid JSON, the expected pass spans nested in their stage, kernel spans
# with bytes); --bench of CPU .fxo artifacts (inference, train, interpreted) reports the bytes,
# flops and steps --bench of their graphs reports. Usage: bench.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"

python3 "$src/bench/make_models.py" --size small --dtype f32 --only mlp,mlp_train,norms -o "$tmp" >/dev/null ||
  { bad "bench/make_models.py"; exit 1; }

# --bench --json: one JSON object on stdout. mlp (64x256 @ 256x256, twice) does 2*2*64*256*256 flops.
if "$fxc" --device=cpu --bench --json "$tmp/mlp.f32.fxg" >"$tmp/mlp.json" 2>"$tmp/err"; then
  python3 - "$tmp/mlp.json" <<'PY' && ok "--bench --json (mlp): fields, percentiles, steps, flops" || bad "--bench --json (mlp)"
import json, sys
j = json.load(open(sys.argv[1]))
need = ["graph", "backend", "device", "mode", "timer", "warmup", "flush_bytes", "runs", "median_ms",
        "p20_ms", "p80_ms", "min_ms", "max_ms", "bytes", "gbps", "flops", "tflops", "compile_ms", "steps"]
missing = [k for k in need if k not in j]
assert not missing, f"missing keys {missing}"
assert j["device"] == "cpu" and j["timer"] == "host_clock" and j["mode"] == "inference", j
assert j["runs"] >= 5 and 0 < j["min_ms"] <= j["p20_ms"] <= j["median_ms"] <= j["p80_ms"] <= j["max_ms"], j
assert j["flops"] == 2 * 2 * 64 * 256 * 256, j["flops"]
assert j["bytes"] == 4 * (64 * 256 * 2 + 2 * (256 * 256 + 256)), j["bytes"]
ext = [s for s in j["steps"] if s["kind"] == "extern"]
ker = [s for s in j["steps"] if s["kind"] == "kernel"]
assert len(ext) == 2 and all(s["flops"] == 2 * 64 * 256 * 256 for s in ext), ext
assert ker and all(s["bytes"] > 0 and s["median_ms"] > 0 for s in ker), ker
PY
else
  bad "--bench --json (mlp) exited non-zero" "$(head -3 "$tmp/err")"
fi

# Train mode: the forward's and the backward's steps.
if "$fxc" --device=cpu --mode=train --bench --json "$tmp/mlp_train.f32.fxg" >"$tmp/train.json" 2>"$tmp/err"; then
  python3 - "$tmp/train.json" <<'PY' && ok "--bench --json --mode=train: forward and backward steps" || bad "--bench --json --mode=train"
import json, sys
j = json.load(open(sys.argv[1]))
graphs = {s["graph"] for s in j["steps"]}
assert j["mode"] == "train" and any("forward" in g for g in graphs) and any("backward" in g for g in graphs), graphs
# forward: 2 matmuls; backward: grad of input and weight for each layer (4 more), 2*64*256*256 each
assert j["flops"] == 6 * 2 * 64 * 256 * 256, j["flops"]
PY
else
  bad "--bench --json --mode=train exited non-zero" "$(head -3 "$tmp/err")"
fi

# --bench of a CPU .fxo: the same bytes, flops and steps as --bench of the graph it was compiled
# from, nonzero GB/s, the artifact's backend and mode; the steps' graph is the plan's role.
artifact_bench() { # artifact_bench <label> <graph> <compile flags...>
  local label=$1 g=$2; shift 2
  if "$fxc" --device=cpu --no-cache "$@" -o "$tmp/$label.fxo" "$g" 2>"$tmp/err" &&
     "$fxc" --device=cpu "$@" --bench --json "$g" >"$tmp/$label.graph.json" 2>"$tmp/err" &&
     "$fxc" --bench --json "$tmp/$label.fxo" >"$tmp/$label.fxo.json" 2>"$tmp/err"; then
    python3 - "$tmp/$label.graph.json" "$tmp/$label.fxo.json" <<'PY' && ok "--bench --json $label.fxo: the graph's bytes, flops and steps" || bad "--bench --json $label.fxo"
import json, sys
g, a = (json.load(open(f)) for f in sys.argv[1:])
assert a["graph"].endswith(".fxo") and a["timer"] == "host_clock" and a["device"] == "cpu", a
for k in ("backend", "mode", "bytes", "flops"):
    assert a[k] == g[k], (k, a[k], g[k])
assert a["bytes"] > 0 and a["gbps"] > 0 and a["runs"] >= 5, a
assert 0 < a["min_ms"] <= a["median_ms"] <= a["max_ms"], a
steps = lambda j: [(s["kind"], s["name"], s["bytes"], s["flops"]) for s in j["steps"]]
assert steps(a) == steps(g), (steps(a), steps(g))
assert all(s["median_ms"] > 0 for s in a["steps"]), a["steps"]
if g["steps"]:
    assert all(s["bytes"] > 0 and s["gbps"] > 0 for s in a["steps"]), a["steps"]
    roles = {s["graph"] for s in a["steps"]}
    assert roles == ({"forward", "backward"} if a["mode"] == "train" else {"inference"}), roles
PY
  else
    bad "--bench --json $label.fxo exited non-zero" "$(head -3 "$tmp/err")"
  fi
}
artifact_bench mlp "$tmp/mlp.f32.fxg"
artifact_bench train "$tmp/mlp_train.f32.fxg" --mode=train
artifact_bench aot_eager "$tmp/mlp.f32.fxg" --backend=aot_eager
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['flops'] == 2*2*64*256*256 and len(j['steps']) == 4, j" "$tmp/mlp.fxo.json" &&
  ok "the mlp .fxo counts its two matmuls' flops in four steps" || bad "mlp .fxo flops/steps"
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['mode'] == 'train' and j['flops'] == 6*2*64*256*256, j" "$tmp/train.fxo.json" &&
  ok "the train .fxo reports mode train and the backward's flops" || bad "train .fxo mode/flops"
out=$("$fxc" --bench "$tmp/mlp.fxo" 2>&1)
echo "$out" | grep -q "GB/s effective" && echo "$out" | grep -q "^  extern linear " &&
  ok "--bench mlp.fxo text report with its steps" || bad "--bench mlp.fxo text report" "$out"

# Text report: the median line, then the step table.
out=$("$fxc" --device=cpu --bench "$tmp/norms.f32.fxg" 2>&1)
echo "$out" | grep -q "median [0-9.]* ms (p20 [0-9.]*, p80 [0-9.]*, min [0-9.]*) over [0-9]* runs" &&
  echo "$out" | grep -q "^  kernel " && ok "--bench text report" || bad "--bench text report" "$out"

check "--json without --bench is a usage error" 2 "$fxc" --device=cpu --json --run "$tmp/norms.f32.fxg"
has "--json without --bench: the message" "$tmp/err" "needs --bench"

# --time-passes: the report on stderr, with the stages and inductor's passes.
"$fxc" --device=cpu --run --time-passes "$tmp/mlp.f32.fxg" >/dev/null 2>"$tmp/tp" || bad "--time-passes run"
for p in "fxc pass timing report" " import$" " frontend$" " decompose$" " inductor$" "   lower$" "   fuse$" \
         "   memory_plan$" "   LLVM O2 + x86 object code + JIT link$"; do
  grep -q -- "$p" "$tmp/tp" && ok "--time-passes reports '$p'" || bad "--time-passes lacks '$p'"
done
"$fxc" --device=cuda --emit=ptx --time-passes -o "$tmp/m.ptx" "$tmp/mlp.f32.fxg" 2>"$tmp/tp" >/dev/null || bad "--emit=ptx --time-passes"
# Without a debug trace each kernel is LLVM IR only (on worker threads: [parallel]); the one
# module of -o compiles them.
P='\( \[parallel\]\)\{0,1\}$'
for p in "   codegen (PTX)$P" "     emit LLVM IR$P" "  emit: one module$P" "    LLVM O2$P" "    NVPTX back end (PTX)$P"; do
  grep -q -- "$p" "$tmp/tp" && ok "--time-passes (cuda) reports '$p'" || bad "--time-passes (cuda) lacks '$p'"
done

# --trace: a Chrome trace of the passes and of one benchmarked run's kernels.
if "$fxc" --device=cpu --bench --trace="$tmp/t.json" "$tmp/mlp.f32.fxg" >/dev/null 2>"$tmp/err"; then
  python3 - "$tmp/t.json" <<'PY' && ok "--trace: valid Chrome trace with pass and kernel spans" || bad "--trace"
import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
spans = [e for e in ev if e["ph"] == "X"]
assert all(isinstance(e[k], (int, float)) for e in spans for k in ("ts", "dur", "pid", "tid")), "numeric fields"
passes = {e["name"]: e for e in spans if e["tid"] == 1}
for name in ["import", "frontend", "aot", "decompose", "inductor", "lower", "fuse", "memory_plan"]:
    assert name in passes, f"no pass span {name}: {sorted(passes)}"
ind = passes["inductor"]
for name in ["lower", "fuse", "memory_plan"]:
    s = passes[name]
    assert ind["ts"] <= s["ts"] and s["ts"] + s["dur"] <= ind["ts"] + ind["dur"] + 1, f"{name} not inside inductor"
kernels = [e for e in spans if e["tid"] == 2]
assert kernels and all(e["args"]["bytes"] > 0 for e in kernels), kernels
assert {e["cat"] for e in kernels} == {"kernel", "extern"}, {e["cat"] for e in kernels}
assert min(e["ts"] for e in kernels) >= ind["ts"] + ind["dur"], "kernels run after compiling"
names = {e["args"]["name"] for e in ev if e["ph"] == "M"}
assert "fxc" in names and "compile passes" in names, names
PY
else
  bad "--bench --trace exited non-zero" "$(head -3 "$tmp/err")"
fi
# --bench --trace of an .fxo: the artifact's plan steps on the kernels track (the plan's role as
# their graph).
if "$fxc" --device=cpu --no-cache -o "$tmp/tr.fxo" "$tmp/mlp.f32.fxg" 2>"$tmp/err" &&
   "$fxc" --bench --trace="$tmp/t3.json" "$tmp/tr.fxo" >/dev/null 2>"$tmp/err"; then
  python3 - "$tmp/t3.json" <<'PY' && ok "--bench --trace x.fxo: the artifact's kernels and externs" || bad "--bench --trace x.fxo"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
kernels = [e for e in ev if e["ph"] == "X" and e["tid"] == 2]
assert {e["cat"] for e in kernels} == {"kernel", "extern"}, kernels
assert all(e["args"]["bytes"] > 0 and e["args"]["graph"] == "inference" for e in kernels), kernels
tracks = {e["args"]["name"] for e in ev if e["ph"] == "M" and e.get("tid") == 2}
assert tracks == {"kernels (one --bench run, host clock)"}, tracks
PY
else
  bad "--bench --trace x.fxo exited non-zero" "$(head -3 "$tmp/err")"
fi
"$fxc" --device=cpu --emit=fx --trace="$tmp/t2.json" "$tmp/norms.f32.fxg" >/dev/null 2>&1 &&
  python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['traceEvents']; assert any(x.get('name')=='import' for x in e)" "$tmp/t2.json" &&
  ok "--trace without --bench: the passes that ran" || bad "--trace with --emit=fx"

exit $fail
