#!/usr/bin/env bash
# The command line: help, version, usage errors, response files, not-yet-supported options,
# emit=fx/fxg, the debug directory. Usage: cli.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # check <description> <expected status> <command...>
  local desc=$1 want=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL $desc: exit $got, want $want"; sed 's/^/     /' "$tmp/err" | head -5; fail=1
  else echo "ok   $desc"; fi
}
has() { # has <description> <file> <substring>
  if grep -qF -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: '$3' not in $2"; head -5 "$2" | sed 's/^/     /'; fail=1; fi
}

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
  if "$FILECHECK" --input-file "$tmp/mlp.txt" "$src/test/golden/mlp_fx.txt"; then echo "ok   FileCheck mlp readable graph"
  else echo "FAIL FileCheck mlp readable graph"; fail=1; fi
else echo "FAIL FileCheck not found (set FILECHECK)"; fail=1; fi

check "--emit=fxg converts" 0 "$fxc" --emit=fxg -o "$tmp/block.fxg" "$fx/block.pt2"
check "--emit=fx of the converted graph" 0 "$fxc" --emit=fx -o "$tmp/block2.txt" "$tmp/block.fxg"
"$fxc" --emit=fx -o "$tmp/block1.txt" "$fx/block.pt2"
if cmp -s "$tmp/block1.txt" "$tmp/block2.txt"; then echo "ok   pt2 -> fxg -> fx is identical"; else echo "FAIL pt2 -> fxg round trip differs"; diff "$tmp/block1.txt" "$tmp/block2.txt" | head; fail=1; fi
cp "$tmp/block.fxg" "$tmp/block_first.fxg"; cp "$tmp/block.safetensors" "$tmp/block_first.safetensors"
"$fxc" --emit=fxg -o "$tmp/block.fxg" "$fx/block.pt2"
if cmp -s "$tmp/block.fxg" "$tmp/block_first.fxg" && cmp -s "$tmp/block.safetensors" "$tmp/block_first.safetensors"; then echo "ok   --emit=fxg is deterministic"; else echo "FAIL --emit=fxg output differs between runs"; fail=1; fi

check "eager run with a debug dir" 0 "$fxc" --backend=eager --run --debug-dir="$tmp/dbg" "$fx/norms.pt2"
run=$(ls -d "$tmp"/dbg/run_*-pid_* 2>/dev/null | head -n 1)
if [ -n "$run" ] && [ -s "$run/fxc/debug.log" ] && [ -s "$run/index.json" ] && [ -s "$run"/inductor/*/fx_graph_readable.txt ]; then
  echo "ok   debug dir has debug.log, index.json and fx_graph_readable.txt"
else echo "FAIL debug dir incomplete: $(find "$tmp/dbg" -type f)"; fail=1; fi
has "debug.log records the frontend stage" "$run/fxc/debug.log" "[frontend]"
has "index.json lists the readable graph" "$run/index.json" "fx_graph_readable.txt"

check "--diagnostics=json" 1 "$fxc" --diagnostics=json --emit=fx "$tmp/nope.pt2"
has "json diagnostic" "$tmp/err" '"severity":"error"'
exit $fail
