#!/usr/bin/env bash
# The debug trace and the log artifacts: train mode's folder layout (docs/design.md §4), the aot log
# with both partitioners' saved bytes, index.json covering every file, and each --log artifact
# turned on and checked. Usage: debug_trace.sh <fxc>
set -u
fxc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"

"$fxc" --backend=inductor --mode=train --run --debug-dir="$tmp/d" "$fx/block.pt2" >/dev/null 2>&1 || bad "train run with a debug dir"
run=$(ls -d "$tmp"/d/run_*-pid_* | head -n 1)
for f in fxc/debug.log index.json aot/aot_block___0_debug.log \
         inductor/block__0_forward_1.0/fx_graph_readable.txt inductor/block__0_forward_1.0/fx_graph_runnable.fxg \
         inductor/block__0_forward_1.0/fx_graph_transformed.txt inductor/block__0_forward_1.0/ir_pre_fusion.txt \
         inductor/block__0_forward_1.0/ir_post_fusion.txt inductor/block__0_forward_1.0/output_code.cpp \
         inductor/block__0_backward_2.1/fx_graph_readable.txt inductor/block__0_backward_2.1/ir_post_fusion.txt; do
  [ -s "$run/$f" ] && ok "trace has $f" || bad "trace lacks $f"
done
ls "$run"/inductor/block__0_forward_1.0/kernels/*.ll >/dev/null 2>&1 && ok "trace has kernels/*.ll" || bad "no kernels/*.ll"
line=$(grep "^saved bytes: default partition" "$run/aot/aot_block___0_debug.log")
d=$(echo "$line" | sed 's/.*default partition \([0-9]*\), min-cut \([0-9]*\)/\1/')
m=$(echo "$line" | sed 's/.*default partition \([0-9]*\), min-cut \([0-9]*\)/\2/')
[ -n "$d" ] && [ -n "$m" ] && [ "$m" -lt "$d" ] && ok "min-cut saves fewer bytes ($m < $d)" || bad "aot log saved bytes: '$line'"
# index.json lists every file of the trace but itself, with size and hash.
listed=$(python3 -c "import json,sys; print('\n'.join(sorted(f['path'] for f in json.load(open(sys.argv[1]))['files'])))" "$run/index.json")
actual=$(cd "$run" && find . -type f ! -name index.json | sed 's|^\./||' | sort)
[ "$listed" = "$actual" ] && ok "index.json lists every file" ||
  bad "index.json differs from the files" "$(diff <(echo "$listed") <(echo "$actual") | head)"
for stage in frontend aot decompose inductor; do
  grep -q "^\[$stage\] done (" "$run/fxc/debug.log" && ok "debug.log times stage $stage" || bad "debug.log lacks stage $stage"
done

art() { # art <artifact> <expected substring> <fxc args...>
  local a=$1 want=$2; shift 2
  "$fxc" --log="$a" "$@" >"$tmp/out" 2>"$tmp/err"
  has "--log=$a prints '$want'" "$tmp/err" "$want"
}
art guards "[fxc:guards] input_0 'x': dtype f32" --backend=inductor --run "$fx/mlp.pt2"
art aot_graphs "[fxc:aot_graphs] ===== backward graph" --backend=aot_eager --mode=train --run "$fx/mlp.pt2"
art ir_pre_fusion "[fxc:ir_pre_fusion]" --backend=inductor --run "$fx/norms.pt2"
art ir_post_fusion "[fxc:ir_post_fusion] kernel fused_" --backend=inductor --run "$fx/norms.pt2"
art output_code "[fxc:output_code] ===== norms__0_inference_0.0/output_code.cpp" --backend=inductor --run "$fx/norms.pt2"
art fusion "[fxc:fusion]" --backend=inductor --run "$fx/mlp.pt2"
art graph_breaks "[fxc:graph_breaks] fallback__0_inference_0.0: fallback aten.linalg_matrix_exp.default: no inductor lowering" --backend=inductor --run "$src/test/graphs/fallback.fxg"
art schedule "[fxc:schedule] mlp__0_inference_0.0 step 0: extern" --backend=inductor --run "$fx/mlp.pt2"
art perf_hints "[fxc:perf_hints] fallback__0_inference_0.0: aten.linalg_matrix_exp.default runs as an unfused fallback" --backend=inductor --run "$src/test/graphs/fallback.fxg"
python3 - "$tmp/x32.safetensors" <<'PY'
import json, struct, sys
data = struct.pack("<%df" % (32 * 256), *[((i * 37) % 101) / 50.0 - 1.0 for i in range(32 * 256)])
hdr = json.dumps({"input_0": {"dtype": "F32", "shape": [32, 256], "data_offsets": [0, len(data)]}}).encode()
hdr += b" " * ((8 - len(hdr) % 8) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(hdr)) + hdr + data)
PY
art recompiles "[fxc:recompiles] recompiling mlp because the guards failed: input_0 'x': expected f32[64, 256], got f32[32, 256]" --backend=inductor --run --inputs "$tmp/x32.safetensors" "$fx/mlp.pt2"
FXC_LOGS=guards "$fxc" --backend=eager --run "$fx/mlp.pt2" >/dev/null 2>"$tmp/err"
has "FXC_LOGS=guards" "$tmp/err" "[fxc:guards]"
FXC_LOGS=guards FXC_LOGS_OUT="$tmp/log.txt" "$fxc" --backend=eager --run "$fx/mlp.pt2" >/dev/null 2>&1
has "FXC_LOGS_OUT receives the logs" "$tmp/log.txt" "[fxc:guards]"
mkdir -p "$tmp/cwd" && (cd "$tmp/cwd" && FXC_COMPILE_DEBUG=1 "$fxc" --backend=eager --run "$fx/mlp.pt2" >/dev/null 2>&1)
ls "$tmp"/cwd/fxc_compile_debug/run_*-pid_*/index.json >/dev/null 2>&1 && ok "FXC_COMPILE_DEBUG=1 writes ./fxc_compile_debug/run_*" || bad "FXC_COMPILE_DEBUG=1"
check "--log=help" 0 "$fxc" --log=help
has "--log=help lists artifacts" "$tmp/out" "graph_breaks"
check "--log=nonsense is a usage error" 2 "$fxc" --log=nonsense --run "$fx/mlp.pt2"
exit $fail
