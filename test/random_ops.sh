#!/usr/bin/env bash
# The random ops (docs/random.md): eager and inductor on the CPU draw the same numbers bit for
# bit; the same --seed gives byte-identical outputs and another seed different ones; the
# distributions hold (means and variances of 1e5 samples, randint's buckets, bernoulli's and
# dropout's keep fractions, dropout's 1/(1-p) scaling, randperm a permutation, the distributions'
# laws, for their in-place forms too, multinomial's frequencies with and without replacement); bad
# arguments fail with the node named. test/ops_e2e.sh runs test/graphs/ops/random.fxg through ptxas.
# Usage: random_ops.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
g=$src/test/graphs/ops/random.fxg
in=$src/test/graphs/ops/random.in.safetensors

# Reads safetensors files without torch: tensors(path) -> {name: (dtype, shape, [values])}.
cat > "$tmp/st.py" <<'EOF'
import json, struct, sys
FMT = {"F32": "f", "F64": "d", "F16": "e", "I64": "q", "I32": "i", "BOOL": "?", "U8": "B"}
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__": continue
        s, e = v["data_offsets"]
        raw = b[8 + n + s:8 + n + e]
        f = FMT[v["dtype"]]
        out[k] = (v["dtype"], v["shape"], list(struct.unpack("<%d%s" % (len(raw) // struct.calcsize(f), f), raw)), raw)
    return out
EOF

# Bit for bit: eager against inductor (cpu), every output's bytes.
check "eager runs random.fxg" 0 "$fxc" --backend=eager --run --inputs="$in" \
  --outputs="$tmp/eager.safetensors" "$g"
check "inductor (cpu) runs random.fxg" 0 "$fxc" --backend=inductor --device=cpu --run \
  --inputs="$in" --outputs="$tmp/ind.safetensors" --log=graph_breaks "$g"
hasnt "inductor lowers every random op (no fallback)" "$tmp/err" "fallback"
cat > "$tmp/bitwise.py" <<'EOF'
import sys; sys.path.insert(0, sys.argv[1]); from st import tensors
a, b = tensors(sys.argv[2]), tensors(sys.argv[3])
assert sorted(a) == sorted(b), (sorted(a), sorted(b))
bad = [k for k in a if a[k][3] != b[k][3] or a[k][:2] != b[k][:2]]
print("outputs", len(a), "differing", bad)
sys.exit(1 if bad else 0)
EOF
check "eager and inductor (cpu) outputs are byte-identical" 0 python3 "$tmp/bitwise.py" "$tmp" \
  "$tmp/eager.safetensors" "$tmp/ind.safetensors"

# Determinism: the same seed twice gives the same bytes; another seed changes every random output.
check "inductor --seed=0 again" 0 "$fxc" --backend=inductor --device=cpu --run --inputs="$in" \
  --outputs="$tmp/ind2.safetensors" --seed=0 "$g"
same "same seed: byte-identical output files" "$tmp/ind.safetensors" "$tmp/ind2.safetensors"
check "eager --seed=7" 0 "$fxc" --backend=eager --run --inputs="$in" \
  --outputs="$tmp/eager7.safetensors" --seed=7 "$g"
check "inductor --seed=7" 0 "$fxc" --backend=inductor --device=cpu --run --inputs="$in" \
  --outputs="$tmp/ind7.safetensors" --seed=7 "$g"
check "--seed=7: eager and inductor still byte-identical" 0 python3 "$tmp/bitwise.py" "$tmp" \
  "$tmp/eager7.safetensors" "$tmp/ind7.safetensors"
cat > "$tmp/differ.py" <<'EOF'
import sys; sys.path.insert(0, sys.argv[1]); from st import tensors
a, b = tensors(sys.argv[2]), tensors(sys.argv[3])
# output_14/15 (eval-mode dropout) do not draw; output_17 is rand_like + x.
same = [k for k in a if a[k][3] == b[k][3] and k not in ("output_14", "output_15")]
print("unchanged by the seed:", same)
sys.exit(1 if same else 0)
EOF
check "another seed changes every random output" 0 python3 "$tmp/differ.py" "$tmp" \
  "$tmp/eager.safetensors" "$tmp/eager7.safetensors"

# Distributions, on 1e5 samples (bounds of 5 standard errors or more).
cat > "$tmp/stats.fxg" <<'EOF'
{"format": "fxg", "version": 1, "name": "random_stats",
 "inputs": [],
 "nodes": [
  {"name": "r", "target": "aten.rand.default", "args": [{"ints": [100000]}]},
  {"name": "rd", "target": "aten.rand.default", "args": [{"ints": [100000]}, {"name": "dtype", "value": {"dtype": "f64"}}]},
  {"name": "rn", "target": "aten.randn.default", "args": [{"ints": [100000]}]},
  {"name": "ri", "target": "aten.randint.low", "args": [-3, 7, {"ints": [100000]}]},
  {"name": "bp", "target": "aten.bernoulli.p", "args": [{"ref": "r"}, 0.3]},
  {"name": "bt", "target": "aten.bernoulli.default", "args": [{"ref": "r"}]},
  {"name": "nd", "target": "aten.native_dropout.default", "args": [{"ref": "rn"}, 0.2, true], "outputs": ["nd_y", "nd_m"]},
  {"name": "rp", "target": "aten.randperm.default", "args": [1000]}
 ],
 "outputs": ["r", "rd", "rn", "ri", "bp", "bt", "nd_y", "nd_m", "rp"]}
EOF
cat > "$tmp/stats.py" <<'EOF'
import math, struct, sys; sys.path.insert(0, sys.argv[1]); from st import tensors
t = {k: v[2] for k, v in tensors(sys.argv[2]).items()}
r, rd, rn, ri, bp, bt, y, m, rp = (t["output_%d" % i] for i in range(9))
errs = []
def near(what, got, want, tol):
    print("%-36s %.6f (want %.6f +- %g)" % (what, got, want, tol))
    if not abs(got - want) <= tol: errs.append(what)
mean = lambda v: sum(v) / len(v)
def var(v):
    mu = mean(v)
    return sum((x - mu) ** 2 for x in v) / len(v)
for name, u in (("rand f32", r), ("rand f64", rd)):
    if not (min(u) >= 0 and max(u) < 1): errs.append(name + " outside [0, 1)")
    near(name + " mean", mean(u), 0.5, 0.005)
    near(name + " variance", var(u), 1 / 12, 0.003)
near("randn mean", mean(rn), 0.0, 0.02)
near("randn variance", var(rn), 1.0, 0.03)
near("randn P(|z| < 1)", sum(abs(z) < 1 for z in rn) / len(rn), 0.682689, 0.008)
if not (min(ri) >= -3 and max(ri) < 7): errs.append("randint outside [-3, 7)")
for v in range(-3, 7):
    near("randint P(%d)" % v, ri.count(v) / len(ri), 0.1, 0.005)
near("bernoulli.p(0.3) mean", mean(bp), 0.3, 0.008)
near("bernoulli(u) mean (E[u] = 1/2)", mean(bt), 0.5, 0.008)
near("dropout(p=0.2) keep fraction", mean(m), 0.8, 0.007)
f32 = lambda v: struct.unpack("f", struct.pack("f", v))[0]
scaled = [f32(x * 1.25) if k else 0.0 for x, k in zip(rn, m)]
if y != scaled: errs.append("dropout output is not input * mask / (1 - p)")
else: print("dropout output = input * mask * 1.25 exactly")
if sorted(rp) != list(range(1000)): errs.append("randperm(1000) is not a permutation")
fixed = sum(i == v for i, v in enumerate(rp))
print("randperm(1000): a permutation with %d fixed points" % fixed)
if fixed > 10: errs.append("randperm(1000) leaves %d points fixed" % fixed)
print("FAILED:", errs if errs else "none")
sys.exit(1 if errs else 0)
EOF
for be in eager inductor; do
  check "$be: the stats graph runs" 0 "$fxc" --backend=$be --device=cpu --run \
    --outputs="$tmp/stats_$be.safetensors" "$tmp/stats.fxg"
  check "$be: distributions within bounds" 0 python3 "$tmp/stats.py" "$tmp" \
    "$tmp/stats_$be.safetensors"
  [ "$fail" = 0 ] || cat "$tmp/out"
done
check "stats: eager and inductor byte-identical" 0 python3 "$tmp/bitwise.py" "$tmp" \
  "$tmp/stats_eager.safetensors" "$tmp/stats_inductor.safetensors"

# Train mode: dropout's mask is an output of the forward that the backward reads
# (native_dropout_backward); the partitioned backends and inductor agree with aot_eager on
# outputs and gradients.
cat > "$tmp/train.fxg" <<'EOF'
{"format": "fxg", "version": 1, "name": "dropout_train",
 "inputs": [
  {"name": "p_w", "kind": "parameter", "fqn": "w", "dtype": "f32", "shape": [8, 16],
   "init": {"rule": "kaiming_uniform", "seed": 1}},
  {"name": "x", "dtype": "f32", "shape": [4, 16]}],
 "nodes": [
  {"name": "lin", "target": "aten.linear.default", "args": [{"ref": "x"}, {"ref": "p_w"}]},
  {"name": "drop", "target": "aten.native_dropout.default", "args": [{"ref": "lin"}, 0.5, true], "outputs": ["drop_y", "drop_m"]},
  {"name": "act", "target": "aten.tanh.default", "args": [{"ref": "drop_y"}]}],
 "outputs": ["act"]}
EOF
check "train: aot_eager runs dropout forward and backward" 0 "$fxc" --backend=aot_eager --mode=train \
  --device=cpu --run --outputs="$tmp/train_eager.safetensors" "$tmp/train.fxg"
for be in aot_eager_decomp_partition inductor; do
  check "train: $be matches aot_eager (outputs and gradients)" 0 "$fxc" --backend=$be --mode=train \
    --device=cpu --run --expect="$tmp/train_eager.safetensors" --rtol=1e-5 --atol=1e-6 \
    "$tmp/train.fxg"
done
check "train: --device=cuda --emit=ptx" 0 "$fxc" --backend=inductor --mode=train --device=cuda \
  --emit=ptx -o "$tmp/train.ptx" "$tmp/train.fxg"
ptxas=${PTXAS:-}
[ -x "$ptxas" ] || ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$ptxas" ]; then
  check "train: ptxas -arch=sm_90 assembles the PTX" 0 "$ptxas" -arch=sm_90 "$tmp/train.ptx" \
    -o "$tmp/train.cubin"
else missing "train PTX through ptxas" "ptxas not found (PTXAS unset)"; fi

# Must-fail arguments name the node.
cat > "$tmp/bad.fxg" <<'EOF'
{"format": "fxg", "version": 1, "name": "bad_randint", "inputs": [],
 "nodes": [{"name": "ri", "target": "aten.randint.low", "args": [5, 5, {"ints": [3]}]}],
 "outputs": ["ri"]}
EOF
check "randint.low(5, 5): refused" 1 "$fxc" --backend=eager --run "$tmp/bad.fxg"
has "randint.low(5, 5): the error names the node" "$tmp/err" \
  "node 'ri' (aten.randint.low): random_ expects 'from' to be less than 'to', but got from=5 >= to=5"
sed 's/"aten.randint.low", "args": \[5, 5, {"ints": \[3\]}\]/"aten.rand.default", "args": [{"ints": [3]}, {"name": "dtype", "value": {"dtype": "i64"}}]/' \
  "$tmp/bad.fxg" > "$tmp/bad2.fxg"
check "rand(dtype=int64): refused" 1 "$fxc" --backend=inductor --device=cpu --run "$tmp/bad2.fxg"
has "rand(dtype=int64): the error names the node" "$tmp/err" \
  "node 'ri' (aten.rand.default): aten.rand.default is not implemented for i64 (a floating dtype is required)"
# The distributions that are functions of rand_like/randn_like samples (docs/random.md): 1e5
# samples each, eager and inductor byte-identical, and each sample set has its law's statistics.
cat >"$tmp/dists.fxg" <<'EOF'
{"format": "fxg", "version": 1, "name": "dists",
 "inputs": [{"name": "x", "dtype": "f32", "shape": [100000]}],
 "nodes": [
  {"name": "expo", "target": "aten.exponential.default", "args": [{"ref": "x"}, 2.0]},
  {"name": "unif", "target": "aten.uniform.default", "args": [{"ref": "x"}, -1.0, 3.0]},
  {"name": "geom", "target": "aten.geometric.default", "args": [{"ref": "x"}, 0.25]},
  {"name": "cauchy", "target": "aten.cauchy.default", "args": [{"ref": "x"}, 1.0, 2.0]},
  {"name": "lognorm", "target": "aten.log_normal.default", "args": [{"ref": "x"}, 0.0, 0.5]},
  {"name": "norm", "target": "aten.normal.Tensor_float", "args": [{"ref": "x"}, 2.0]},
  {"name": "rint", "target": "aten.randint_like.default", "args": [{"ref": "x"}, 10]}],
 "outputs": ["expo", "unif", "geom", "cauchy", "lognorm", "norm", "rint"]}
EOF
python3 - "$tmp/dists.in.safetensors" <<'EOF'
import json, struct, sys
n = 100000
h = json.dumps({'input_0': {'dtype': 'F32', 'shape': [n], 'data_offsets': [0, 4 * n]}}).encode()
h += b' ' * (-len(h) % 8)
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(h)) + h + b'\0' * (4 * n))
EOF
for b in eager inductor; do
  check "distributions run ($b)" 0 "$fxc" --backend=$b --device=cpu --run \
    --inputs="$tmp/dists.in.safetensors" --outputs="$tmp/dists.$b.safetensors" "$tmp/dists.fxg"
done
# The same uniform and normal samples: equal, up to the last bits of log1p, tan and exp where
# those transform them (the reference kernels call libm, the generated code its own routines).
cat >"$tmp/close.py" <<'EOF'
import sys; sys.path.insert(0, sys.argv[1]); from st import tensors
a, b = tensors(sys.argv[2]), tensors(sys.argv[3])
import math
# cauchy (output_3) = 1 + 2 tan(pi (u - 1/2)) is compared as its angle: tan is steep near +-pi/2.
angle = lambda v: [math.atan((x - 1) / 2) for x in v]
val = lambda k, t: angle(t[k][2]) if k == "output_3" else t[k][2]
bad = [k for k in a if a[k][:2] != b[k][:2] or
       any(abs(x - y) > 1e-6 * max(abs(x), abs(y), 1) for x, y in zip(val(k, a), val(k, b)))]
exact = [k for k in a if a[k][3] == b[k][3]]
print("outputs", len(a), "differing", bad, "byte-identical", exact)
sys.exit(1 if bad or not {"output_1", "output_2", "output_5", "output_6"} <= set(exact) else 0)
EOF
check "distributions: eager and inductor draw the same samples" 0 python3 "$tmp/close.py" "$tmp" \
  "$tmp/dists.eager.safetensors" "$tmp/dists.inductor.safetensors"
cat >"$tmp/dists.py" <<'EOF'
import math, statistics as st, sys
sys.path.insert(0, sys.argv[1]); from st import tensors
t = tensors(sys.argv[2])
v = [t["output_%d" % i][2] for i in range(7)]
expo, unif, geom, cauchy, lognorm, norm, rint = v
inplace = sys.argv[3:] == ["inplace"]  # output_6 is then uniform_(y), checked on its own
checks = {
  "exponential(2): mean 0.5, min >= 0": abs(st.fmean(expo) - 0.5) < 0.01 and min(expo) >= 0,
  "uniform(-1, 3): in [-1, 3), mean 1": min(unif) >= -1 and max(unif) < 3 and abs(st.fmean(unif) - 1) < 0.02,
  "geometric(0.25): integers >= 1, mean 4": all(x >= 1 and x == int(x) for x in geom) and abs(st.fmean(geom) - 4) < 0.06,
  "cauchy(1, 2): median 1, quartiles -1 and 3": abs(st.median(cauchy) - 1) < 0.05 and
      abs(st.quantiles(cauchy, n=4)[0] + 1) < 0.1 and abs(st.quantiles(cauchy, n=4)[2] - 3) < 0.1,
  "log_normal(0, 0.5): log mean 0, log std 0.5": min(lognorm) > 0 and
      abs(st.fmean(map(math.log, lognorm))) < 0.01 and abs(st.pstdev(list(map(math.log, lognorm))) - 0.5) < 0.01,
  "normal(0, 2): mean 0, std 2": abs(st.fmean(norm)) < 0.03 and abs(st.pstdev(norm) - 2) < 0.03,
  "randint_like(10): integers 0..9, each about 10%": inplace or set(rint) == set(range(10)) and
      all(abs(rint.count(k) / len(rint) - 0.1) < 0.006 for k in range(10)),
}
if inplace: del checks["randint_like(10): integers 0..9, each about 10%"]
for k, ok in checks.items(): print(("ok   " if ok else "FAIL ") + k)
sys.exit(0 if all(checks.values()) else 1)
EOF
check "distributions hold their laws" 0 python3 "$tmp/dists.py" "$tmp" "$tmp/dists.eager.safetensors"
sed 's/^/     /' "$tmp/out"

# The in-place forms a default export keeps: on fresh storage (clone) inductor functionalizes them
# into the functional ops, named as the in-place node (the same stream as eager's kernel); a write
# into a graph input (y) stays in place, the reference kernel on both backends. The same laws.
cat >"$tmp/inplace.fxg" <<'EOF2'
{"format": "fxg", "version": 1, "name": "inplace_dists",
 "inputs": [{"name": "x", "dtype": "f32", "shape": [100000]}, {"name": "y", "dtype": "f32", "shape": [1000]}],
 "nodes": [
  {"name": "c0", "target": "aten.clone.default", "args": [{"ref": "x"}]},
  {"name": "c1", "target": "aten.clone.default", "args": [{"ref": "x"}]},
  {"name": "c2", "target": "aten.clone.default", "args": [{"ref": "x"}]},
  {"name": "c3", "target": "aten.clone.default", "args": [{"ref": "x"}]},
  {"name": "c4", "target": "aten.clone.default", "args": [{"ref": "x"}]},
  {"name": "c5", "target": "aten.clone.default", "args": [{"ref": "x"}]},
  {"name": "expo_", "target": "aten.exponential_.default", "args": [{"ref": "c0"}, 2.0]},
  {"name": "unif_", "target": "aten.uniform_.default", "args": [{"ref": "c1"}, -1.0, 3.0]},
  {"name": "geom_", "target": "aten.geometric_.default", "args": [{"ref": "c2"}, 0.25]},
  {"name": "cauchy_", "target": "aten.cauchy_.default", "args": [{"ref": "c3"}, 1.0, 2.0]},
  {"name": "lognorm_", "target": "aten.log_normal_.default", "args": [{"ref": "c4"}, 0.0, 0.5]},
  {"name": "norm_", "target": "aten.normal_.default", "args": [{"ref": "c5"}, 0.0, 2.0]},
  {"name": "yu_", "target": "aten.uniform_.default", "args": [{"ref": "y"}, 5.0, 6.0]}],
 "outputs": ["expo_", "unif_", "geom_", "cauchy_", "lognorm_", "norm_", "yu_"]}
EOF2
python3 - "$tmp/inplace.in.safetensors" <<'EOF2'
import json, struct, sys
n, m = 100000, 1000
h = json.dumps({'input_0': {'dtype': 'F32', 'shape': [n], 'data_offsets': [0, 4 * n]},
                'input_1': {'dtype': 'F32', 'shape': [m], 'data_offsets': [4 * n, 4 * (n + m)]}}).encode()
h += b' ' * (-len(h) % 8)
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(h)) + h + b'\0' * (4 * (n + m)))
EOF2
for b in eager inductor; do
  check "in-place distributions run ($b)" 0 "$fxc" --backend=$b --device=cpu --run \
    --inputs="$tmp/inplace.in.safetensors" --outputs="$tmp/inplace.$b.safetensors" \
    --log=graph_breaks "$tmp/inplace.fxg"
done
# Inductor functionalizes the writes into clones; only the write into the graph input y is left
# to an extern call of its reference kernel.
has "inductor: the write into a graph input is an extern call" "$tmp/err" \
  "fallback aten.uniform_.default"
if [ "$(grep -c fallback "$tmp/err")" = 1 ]; then ok "inductor: the writes into clones are functionalized"
else bad "inductor: the writes into clones are functionalized" "$(grep fallback "$tmp/err")"; fi
check "in-place distributions: eager and inductor draw the same samples" 0 python3 \
  "$tmp/close.py" "$tmp" "$tmp/inplace.eager.safetensors" "$tmp/inplace.inductor.safetensors"
cat >"$tmp/inplace.py" <<'EOF2'
import sys
sys.path.insert(0, sys.argv[1]); from st import tensors
t = tensors(sys.argv[2])
y = t["output_6"][2]
ok = min(y) >= 5 and max(y) < 6 and len(set(y)) > 990
print(("ok   " if ok else "FAIL ") + "uniform_ of a graph input: in [5, 6), 1000 distinct values")
sys.exit(0 if ok else 1)
EOF2
check "in-place distributions hold their laws" 0 python3 "$tmp/dists.py" "$tmp" \
  "$tmp/inplace.eager.safetensors" inplace
sed 's/^/     /' "$tmp/out"
check "uniform_ into a graph input" 0 python3 "$tmp/inplace.py" "$tmp" "$tmp/inplace.eager.safetensors"

# multinomial (docs/random.md): with replacement (inversion) and without (the exponential race),
# 1-D and 2-D; eager and inductor byte-identical; frequencies of p = (0.1, 0.2, 0.3, 0.4, 0).
cat >"$tmp/multi.fxg" <<'EOF2'
{"format": "fxg", "version": 1, "name": "multinomial_stats",
 "inputs": [{"name": "p", "dtype": "f32", "shape": [5]}],
 "nodes": [
  {"name": "pe", "target": "aten.expand.default", "args": [{"ref": "p"}, {"ints": [20000, 5]}]},
  {"name": "mr", "target": "aten.multinomial.default", "args": [{"ref": "p"}, 100000, true]},
  {"name": "mw", "target": "aten.multinomial.default", "args": [{"ref": "pe"}, 2]},
  {"name": "m1", "target": "aten.multinomial.default", "args": [{"ref": "pe"}, 1, true]},
  {"name": "mr2", "target": "aten.multinomial.default", "args": [{"ref": "pe"}, 3, true]}],
 "outputs": ["mr", "mw", "m1", "mr2"]}
EOF2
python3 - "$tmp/multi.in.safetensors" <<'EOF2'
import json, struct, sys
h = json.dumps({'input_0': {'dtype': 'F32', 'shape': [5], 'data_offsets': [0, 20]}}).encode()
h += b' ' * (-len(h) % 8)
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(h)) + h + struct.pack('<5f', 0.1, 0.2, 0.3, 0.4, 0))
EOF2
for b in eager inductor; do
  check "multinomial runs ($b)" 0 "$fxc" --backend=$b --device=cpu --run \
    --inputs="$tmp/multi.in.safetensors" --outputs="$tmp/multi.$b.safetensors" "$tmp/multi.fxg"
done
check "multinomial: eager and inductor byte-identical" 0 python3 "$tmp/bitwise.py" "$tmp" \
  "$tmp/multi.eager.safetensors" "$tmp/multi.inductor.safetensors"
cat >"$tmp/multi.py" <<'EOF2'
import sys
sys.path.insert(0, sys.argv[1]); from st import tensors
t = tensors(sys.argv[2])
mr, mw, m1, mr2 = (t["output_%d" % i][2] for i in range(4))
p = [0.1, 0.2, 0.3, 0.4, 0.0]
# The second draw without replacement: sum over the first i of p_i p_j / (1 - p_i).
second = [sum(p[i] * p[j] / (1 - p[i]) for i in range(5) if i != j) for j in range(5)]
freq = lambda v, j: v.count(j) / len(v)
checks = {
  "with replacement (1e5): frequencies p, never the zero category":
      all(abs(freq(mr, j) - p[j]) < 0.008 for j in range(5)),
  "without replacement (2e4 rows of 2): first draws p, second draws sequential":
      all(abs(freq(mw[0::2], j) - p[j]) < 0.018 and abs(freq(mw[1::2], j) - second[j]) < 0.018
          for j in range(5)),
  "without replacement: two distinct categories per row": all(a != b for a, b in zip(mw[0::2], mw[1::2])),
  "one sample (exponential race, 2e4 rows): frequencies p": all(abs(freq(m1, j) - p[j]) < 0.018 for j in range(5)),
  "with replacement, 2-D (2e4 rows of 3): frequencies p": all(abs(freq(mr2, j) - p[j]) < 0.012 for j in range(5)),
}
for k, ok in checks.items(): print(("ok   " if ok else "FAIL ") + k)
sys.exit(0 if all(checks.values()) else 1)
EOF2
check "multinomial samples its distribution" 0 python3 "$tmp/multi.py" "$tmp" "$tmp/multi.eager.safetensors"
sed 's/^/     /' "$tmp/out"
sed 's/"mw", "target": "aten.multinomial.default", "args": \[{"ref": "pe"}, 2\]/"mw", "target": "aten.multinomial.default", "args": [{"ref": "pe"}, 6]/' \
  "$tmp/multi.fxg" >"$tmp/multi_bad.fxg"
check "multinomial(p, 6) of 5 categories without replacement: refused" 1 "$fxc" --backend=eager \
  --run --inputs="$tmp/multi.in.safetensors" "$tmp/multi_bad.fxg"
has "multinomial: the error names the node" "$tmp/err" \
  "node 'mw' (aten.multinomial.default): cannot sample n_sample > prob_dist.size(-1) samples without replacement"
exit $fail
