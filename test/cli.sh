#!/usr/bin/env bash
# The command line: help, version, usage errors, response files, not-yet-supported options,
# emit=fx/fxg, the debug directory. Usage: cli.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"

check "--help exits 0" 0 "$fxc" --help
has "--help lists --backend" "$tmp/out" "--backend"
check "--version exits 0" 0 "$fxc" --version
has "--version prints the version" "$tmp/out" "fxc version"
check "unknown option is a usage error" 2 "$fxc" --frobnicate "$fx/mlp.pt2"
check "bad --backend value is a usage error" 2 "$fxc" --backend=tvm --emit=fx "$fx/mlp.pt2"
check "no input is a usage error" 2 "$fxc" --emit=fx
check "--emit=obj for CUDA is not yet supported" 2 "$fxc" --device=cuda --emit=obj "$fx/mlp.pt2"
has "not yet supported message" "$tmp/err" "not yet supported"
check "--trace writes a Chrome trace" 0 "$fxc" --trace="$tmp/t.json" --run "$fx/mlp.pt2"
has "--trace file has traceEvents" "$tmp/t.json" '"traceEvents"'
check "missing file is exit 1" 1 "$fxc" --emit=fx "$tmp/nope.pt2"
has "missing file names the file" "$tmp/err" "nope.pt2: error:"

printf -- '--emit=fx\n-o "%s"\n' "$tmp/rsp.txt" > "$tmp/args.rsp"
check "@response-file" 0 "$fxc" "@$tmp/args.rsp" "$fx/mlp.pt2"
has "@response-file wrote the graph" "$tmp/rsp.txt" 'aten.linear.default(x, p_fc1_weight, p_fc1_bias)'

check "--emit=fx of mlp" 0 "$fxc" --emit=fx -o "$tmp/mlp.txt" "$fx/mlp.pt2"
if [ -n "${FILECHECK:-}" ] && [ -x "${FILECHECK}" ]; then
  check "FileCheck mlp readable graph" 0 \
    "$FILECHECK" --input-file "$tmp/mlp.txt" "$src/test/golden/mlp_fx.txt"
else bad "FileCheck not found (set FILECHECK)"; fi

check "--emit=fxg converts" 0 "$fxc" --emit=fxg -o "$tmp/block.fxg" "$fx/block.pt2"
check "--emit=fx of the converted graph" 0 "$fxc" --emit=fx -o "$tmp/block2.txt" "$tmp/block.fxg"
"$fxc" --emit=fx -o "$tmp/block1.txt" "$fx/block.pt2"
same "pt2 -> fxg -> fx is identical" "$tmp/block1.txt" "$tmp/block2.txt"
cp "$tmp/block.fxg" "$tmp/block_first.fxg"; cp "$tmp/block.safetensors" "$tmp/block_first.safetensors"
"$fxc" --emit=fxg -o "$tmp/block.fxg" "$fx/block.pt2"
same "--emit=fxg is deterministic (graph)" "$tmp/block.fxg" "$tmp/block_first.fxg"
same "--emit=fxg is deterministic (weights)" "$tmp/block.safetensors" "$tmp/block_first.safetensors"

check "eager run with a debug dir" 0 "$fxc" --backend=eager --run --debug-dir="$tmp/dbg" "$fx/norms.pt2"
run=$(ls -d "$tmp"/dbg/run_*-pid_* 2>/dev/null | head -n 1)
if [ -n "$run" ] && [ -s "$run/fxc/debug.log" ] && [ -s "$run/index.json" ] && [ -s "$run"/inductor/*/fx_graph_readable.txt ]; then
  ok "debug dir has debug.log, index.json and fx_graph_readable.txt"
else bad "debug dir incomplete" "$(find "$tmp/dbg" -type f)"; fi
has "debug.log records the frontend stage" "$run/fxc/debug.log" "[frontend]"
has "index.json lists the readable graph" "$run/index.json" "fx_graph_readable.txt"

check "--diagnostics=json" 1 "$fxc" --diagnostics=json --emit=fx "$tmp/nope.pt2"
has "json diagnostic" "$tmp/err" '"severity":"error"'
exit $fail
