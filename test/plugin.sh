#!/usr/bin/env bash
# Custom-op plugins end to end: builds examples/custom_op/scaled_softplus.c, runs the example
# graph on every backend against values computed in float64 (examples/custom_op/*.safetensors),
# checks that inductor fuses the pointwise ops around the extern call, and the failure cases
# (missing file, not a library, no entry point, bad version, bad schema, duplicate op, graph
# without its plugin, training through the op). Usage: plugin.sh <fxc>
set -u
fxc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
ex=$src/examples/custom_op
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
cc=${CC:-cc}
build() { # build <out.so> <source.c>
  "$cc" -shared -fPIC -O2 -I"$src/include" "$2" -o "$1" -ldl -lm -lpthread
}

so=$tmp/libscaled_softplus.so
if ! build "$so" "$ex/scaled_softplus.c"; then bad "building the example plugin"; exit 1; fi
ok "the example plugin builds"
# The CUDA kernel's PTX (run on the GPU by test/gpu/e2e/plugin_cuda.sh) assembles for sm_90.
PTXAS=${PTXAS:-}
[ -x "$PTXAS" ] || PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$PTXAS" ]; then
  python3 - "$ex/scaled_softplus.c" "$tmp/sp.ptx" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
body = s[s.index('static const char kPtx[] ='):s.index('typedef int (*ModuleLoadData)')]
text = ''.join(re.findall(r'"((?:[^"\\]|\\.)*)"', body))
open(sys.argv[2], 'w').write(text.encode().decode('unicode_escape'))
PY
  check "the example's PTX assembles for sm_90" 0 "$PTXAS" -arch=sm_90 "$tmp/sp.ptx" -o "$tmp/sp.cubin"
else missing "the PTX check" "ptxas not found (PTXAS unset)"; fi
run=(--device=cpu --run --inputs "$ex/softplus.inputs.safetensors"
     --expect "$ex/softplus.expected.safetensors" "$ex/softplus.fxg")
for b in eager aot_eager aot_eager_decomp_partition inductor; do
  check "$b matches the float64 formula" 0 "$fxc" --plugin="$so" --backend=$b "${run[@]}"
done
check "inductor --check-accuracy on random inputs" 0 \
  "$fxc" --plugin="$so" --device=cpu --check-accuracy --seed=7 "$ex/softplus.fxg"

# Fused code on both sides: mul+add in one kernel, the extern call, sqrt+mul in another.
check "inductor with a debug directory" 0 \
  "$fxc" --plugin="$so" --device=cpu --run --debug-dir="$tmp/dbg" "$ex/softplus.fxg"
post=$(find "$tmp/dbg" -name ir_post_fusion.txt | head -n 1)
if [ -z "$post" ]; then bad "no ir_post_fusion.txt"; else
  kernels=$(grep -c '^kernel ' "$post"); externs=$(grep -c '^extern ' "$post")
  if [ "$kernels" -eq 2 ] && [ "$externs" -eq 1 ]; then ok "2 fused kernels around 1 extern call"
  else bad "expected 2 kernels and 1 extern, got $kernels and $externs"; sed 's/^/     /' "$post" | head -30; fi
  has "the extern call is the custom op" "$post" "mylib.scaled_softplus.default"
fi

# The extern call is by design: a perf hint, not a graph break.
check "inductor with --log=graph_breaks,perf_hints" 0 \
  "$fxc" --plugin="$so" --device=cpu --run --log=graph_breaks,perf_hints "$ex/softplus.fxg"
has "perf hint for the custom op" "$tmp/err" \
  "custom op mylib.scaled_softplus.default runs as an extern call to its plugin's kernel"
hasnt "the custom op is not a graph break" "$tmp/err" "graph_breaks"

# output_code.cpp of the graph builds against fxc's runtime and loads the plugin from FXC_PLUGINS.
llc=$(command -v llc-19 || echo /usr/lib/llvm-19/bin/llc)
bdir=$(dirname "$fxc")
gdir=$(dirname "$(find "$tmp/dbg" -name output_code.cpp | head -n 1)")
# The build recipe is followed as written at the top of the file: its llc line, then its g++ line
# with the placeholders <fxc source> and <fxc build> filled in.
recipe=$(sed -n 's|^//   \(g++ .*-DFXC_WITH_RUNTIME.*\)$|\1|p' "$gdir/output_code.cpp" | head -n 1)
recipe=${recipe//<fxc source>/$src}; recipe=${recipe//<fxc build>/$bdir}
if [ -z "$recipe" ]; then bad "output_code.cpp states no build recipe with the runtime"; fi
if [ -n "$recipe" ] && (cd "$gdir" && for f in kernels/*.ll; do "$llc" -O2 -filetype=obj -relocation-model=pic "$f" -o "${f%.ll}.o" || exit 1; done &&
    eval "$recipe") >"$tmp/out" 2>&1; then
  ok "output_code.cpp builds by its own recipe"
  check "output_code.cpp runs with FXC_PLUGINS" 0 env -C "$gdir" FXC_PLUGINS="$so" "$gdir/model" 2
  has "output_code.cpp prints its time" "$tmp/out" "median"
else bad "building output_code.cpp"; head -20 "$tmp/out" | sed 's/^/     /'; fi

# The op survives --emit=fxg and the result runs again.
check "--emit=fxg keeps the custom op" 0 "$fxc" --plugin="$so" --emit=fxg -o "$tmp/rt.fxg" "$ex/softplus.fxg"
has "emitted target" "$tmp/rt.fxg" '"mylib.scaled_softplus.default"'
check "the emitted graph runs" 0 "$fxc" --plugin="$so" --device=cpu --run \
  --inputs "$ex/softplus.inputs.safetensors" --expect "$ex/softplus.expected.safetensors" "$tmp/rt.fxg"

# A torch.export archive calling the op as torch.export writes it: mlp.pt2 with its first relu
# replaced by torch.ops.mylib.scaled_softplus.default(x, beta=2.0).
python3 - "$src/test/fixtures/mlp.pt2" "$tmp/softplus_mlp.pt2" <<'PY'
import json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_STORED) as out:
    for info in z.infolist():
        data = z.read(info.filename)
        if info.filename.endswith("models/model.json"):
            m = json.loads(data)
            node = next(n for n in m["graph_module"]["graph"]["nodes"]
                        if n["target"] == "torch.ops.aten.relu.default")
            node["target"] = "torch.ops.mylib.scaled_softplus.default"
            node["inputs"][0]["name"] = "x"
            node["inputs"].append({"name": "beta", "arg": {"as_float": 2.0}, "kind": 1})
            data = json.dumps(m).encode()
        out.writestr(info, data)
PY
check ".pt2 calling the op without its plugin" 1 "$fxc" --device=cpu --emit=fx "$tmp/softplus_mlp.pt2"
has ".pt2 unknown operator message" "$tmp/err" \
  "softplus_mlp.pt2: error: node 'relu' (mylib.scaled_softplus.default): unknown operator 'mylib::scaled_softplus' (load its plugin with --plugin)"
check ".pt2 calling the op: inductor --check-accuracy" 0 \
  "$fxc" --plugin="$so" --device=cpu --check-accuracy "$tmp/softplus_mlp.pt2"
check ".pt2 calling the op: readable graph" 0 "$fxc" --plugin="$so" --emit=fx "$tmp/softplus_mlp.pt2"
has ".pt2 readable graph shows the call" "$tmp/out" "mylib.scaled_softplus.default"

# An artifact calling the op runs with the plugin and names the op without it.
check "compile to .fxo with the plugin" 0 "$fxc" --plugin="$so" --device=cpu "$ex/softplus.fxg" -o "$tmp/sp.fxo"
check "the .fxo runs with the plugin" 0 "$fxc" --plugin="$so" --run "$tmp/sp.fxo" \
  --inputs "$ex/softplus.inputs.safetensors" --expect "$ex/softplus.expected.safetensors"
check "the .fxo without the plugin" 1 "$fxc" --run "$tmp/sp.fxo"
has ".fxo unknown operator message" "$tmp/err" "unknown operator 'mylib::scaled_softplus' (load its plugin with --plugin)"

# Failures: one diagnostic each, exit 1.
check "graph without its plugin" 1 "$fxc" --device=cpu --run "$ex/softplus.fxg"
has "unknown operator message" "$tmp/err" \
  "softplus.fxg: error: node 'softplus' (mylib.scaled_softplus.default): unknown operator 'mylib::scaled_softplus' (load its plugin with --plugin)"
check "missing plugin file" 1 "$fxc" --plugin="$tmp/nope.so" --device=cpu --run "$ex/softplus.fxg"
has "missing plugin message" "$tmp/err" "$tmp/nope.so: error: cannot load plugin: no such file"
check "a file that is not a library" 1 "$fxc" --plugin="$ex/softplus.fxg" --device=cpu --run "$ex/softplus.fxg"
has "not a library message" "$tmp/err" "error: cannot load plugin: "

cat >"$tmp/noinit.c" <<'EOF'
int some_function(void) { return 0; }
EOF
cat >"$tmp/badversion.c" <<'EOF'
#include "fxc/plugin.h"
static int sh(const fxc_op_args* a, int32_t n, fxc_tensor_desc* o, char* e) { o[0] = a->inputs[0]; return 0; }
static int k(const fxc_op_args* a, const void* const* i, void* const* o, char* e) { return 0; }
int fxc_plugin_init(fxc_plugin_registry* r) {
  fxc_op_desc d = {FXC_PLUGIN_API_VERSION + 1, "other::f", "f(Tensor x) -> Tensor", sh, k, 0};
  return r->register_op(r, &d);
}
EOF
sed -e 's/FXC_PLUGIN_API_VERSION + 1/FXC_PLUGIN_API_VERSION/' \
    -e 's/"f(Tensor x) -> Tensor"/"f(Tensor x, str s) -> Tensor"/' "$tmp/badversion.c" >"$tmp/badschema.c"
sed -e 's/FXC_PLUGIN_API_VERSION + 1/FXC_PLUGIN_API_VERSION/' -e 's/return r->register_op(r, &d);/r->register_op(r, \&d); return 3;/' \
    "$tmp/badversion.c" >"$tmp/initfails.c"
for p in noinit badversion badschema initfails; do
  build "$tmp/lib$p.so" "$tmp/$p.c" || bad "building lib$p.so"
done
check "library without an entry point" 1 "$fxc" --plugin="$tmp/libnoinit.so" --device=cpu --run "$ex/softplus.fxg"
has "no entry point message" "$tmp/err" "libnoinit.so: error: not an fxc plugin: it does not export 'fxc_plugin_init'"
check "plugin of another API version" 1 "$fxc" --plugin="$tmp/libbadversion.so" --device=cpu --run "$ex/softplus.fxg"
has "bad version message" "$tmp/err" "an op descriptor has plugin API version 2; this fxc supports version 1"
check "plugin with a bad schema" 1 "$fxc" --plugin="$tmp/libbadschema.so" --device=cpu --run "$ex/softplus.fxg"
has "bad schema message" "$tmp/err" "op 'other::f': schema 'f(Tensor x, str s) -> Tensor': argument 's' has type str"
check "plugin whose init fails" 1 "$fxc" --plugin="$tmp/libinitfails.so" --device=cpu --run "$ex/softplus.fxg"
has "init failure message" "$tmp/err" "plugin initialisation failed (fxc_plugin_init returned 3)"
cp "$so" "$tmp/libcopy.so"
check "the same op from two libraries" 1 "$fxc" --plugin="$so" --plugin="$tmp/libcopy.so" --device=cpu --run "$ex/softplus.fxg"
has "duplicate op message" "$tmp/err" "libcopy.so: error: plugin registration failed: op 'mylib::scaled_softplus' is already registered (by $so)"
check "the same library twice loads once" 0 "$fxc" --plugin="$so" --plugin="$so" "${run[@]}"
check "training through the op" 1 "$fxc" --plugin="$so" --device=cpu --mode=train --backend=aot_eager --run "$ex/softplus.fxg"
has "no derivative message" "$tmp/err" "node 'softplus' (mylib.scaled_softplus.default): custom op 'mylib::scaled_softplus' has no derivative"

exit $fail
