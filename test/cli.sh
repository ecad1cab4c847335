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
# --cuda-arch is checked against the processors LLVM's NVPTX back end knows, before anything
# compiles: a usage error (exit 2) listing them, one line on stderr (no warning from a worker
# thread), no output file. Also without --device=cuda.
check "--cuda-arch=banana is a usage error" 2 "$fxc" --cuda-arch=banana --device=cuda --emit=ptx \
  -o "$tmp/banana.ptx" "$fx/mlp.pt2"
has "--cuda-arch=banana: the message" "$tmp/err" "fxc: error: invalid value 'banana' for '--cuda-arch'; valid values: "
has "--cuda-arch=banana: the valid values include sm_90" "$tmp/err" "sm_90"
hasnt "--cuda-arch=banana: no LLVM warning" "$tmp/err" "not a recognized processor"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && ok "--cuda-arch=banana: one line on stderr" ||
  bad "--cuda-arch=banana: $(wc -l <"$tmp/err") lines on stderr" "$(cat "$tmp/err")"
[ ! -e "$tmp/banana.ptx" ] && ok "--cuda-arch=banana: no output file" || bad "--cuda-arch=banana wrote $tmp/banana.ptx"
check "--cuda-arch=banana without --device=cuda" 2 "$fxc" --cuda-arch=banana --emit=fx "$fx/mlp.pt2"
has "--cuda-arch=banana without --device=cuda: the message" "$tmp/err" "invalid value 'banana' for '--cuda-arch'"
check "--cuda-arch=sm_9 (not a processor)" 2 "$fxc" --cuda-arch=sm_9 --device=cuda --emit=ptx \
  -o "$tmp/sm9.ptx" "$fx/mlp.pt2"
check "--cuda-arch=banana --diagnostics=json" 2 "$fxc" --diagnostics=json --cuda-arch=banana \
  --emit=fx "$fx/mlp.pt2"
has "--cuda-arch=banana --diagnostics=json: one JSON object" "$tmp/err" '"message":"invalid value '"'"'banana'"'"' for '"'"'--cuda-arch'"'"'; valid values: '
check "--cuda-arch=sm_80" 0 "$fxc" --cuda-arch=sm_80 --device=cuda --emit=ptx -o "$tmp/sm80.ptx" \
  "$fx/mlp.pt2"
has "--cuda-arch=sm_80: .target sm_80" "$tmp/sm80.ptx" ".target sm_80"
[ ! -s "$tmp/err" ] && ok "--cuda-arch=sm_80: nothing on stderr" || bad "--cuda-arch=sm_80: stderr" "$(cat "$tmp/err")"

# CPU --emit=llvm and --emit=obj write one module holding every kernel of every graph (train
# mode: forward and backward): llvm-as-19 takes the .ll whole; the object is one ELF
# relocatable file defining every kernel named in the .ll's "===== fxc kernel" lines (berttiny's
# backward has a kernel of a forward kernel's name: renamed "<name>_backward").
llvm_as=$(command -v llvm-as-19 || command -v llvm-as || true)
for gm in mlp:inference block:inference mlp:train block:train berttiny:train; do
  g=${gm%:*} mode=${gm#*:}
  check "cpu --emit=llvm $g $mode" 0 "$fxc" --device=cpu --mode=$mode --emit=llvm \
    -o "$tmp/$g-$mode.ll" "$fx/$g.pt2"
  if [ -z "$llvm_as" ]; then echo "SKIP llvm-as-19 not found (install llvm-19-tools): cpu --emit=llvm $g $mode not assembled"
  elif "$llvm_as" "$tmp/$g-$mode.ll" -o "$tmp/$g-$mode.bc" 2>"$tmp/as"; then ok "llvm-as-19 takes cpu --emit=llvm $g $mode whole"
  else bad "llvm-as-19 rejects cpu --emit=llvm $g $mode" "$(cat "$tmp/as")"; fi
  check "cpu --emit=obj $g $mode" 0 "$fxc" --device=cpu --mode=$mode --emit=obj -o "$tmp/$g-$mode.o" \
    "$fx/$g.pt2"
  if ! command -v readelf >/dev/null || ! command -v nm >/dev/null; then
    echo "SKIP readelf/nm not found (binutils): cpu --emit=obj $g $mode not inspected"; continue
  fi
  readelf -h "$tmp/$g-$mode.o" 2>/dev/null | grep -q 'Type:.*REL (Relocatable file)' &&
    ok "cpu --emit=obj $g $mode: one relocatable ELF object" ||
    bad "cpu --emit=obj $g $mode: not one ELF relocatable object" "$(readelf -h "$tmp/$g-$mode.o" 2>&1 | head -8)"
  nm --defined-only "$tmp/$g-$mode.o" | awk '$2 == "T" { print $3 }' | sort >"$tmp/defined"
  sed -n 's/^; ===== fxc kernel [^/]*\/\([^ ]*\)\( (symbol \([^)]*\))\)\{0,1\} =====$/\1 \3/p' \
    "$tmp/$g-$mode.ll" | awk '{ print $2 != "" ? $2 : $1 }' | sort >"$tmp/listed"
  if [ -s "$tmp/listed" ] && comm -23 "$tmp/listed" "$tmp/defined" | grep -q .; then
    bad "cpu --emit=obj $g $mode: kernels missing from the object" "$(comm -23 "$tmp/listed" "$tmp/defined")"
  elif [ -s "$tmp/listed" ]; then ok "cpu --emit=obj $g $mode: all $(wc -l <"$tmp/listed") kernels defined"
  else bad "cpu --emit=llvm $g $mode lists no kernels"; fi
done
has "cpu --emit=llvm berttiny train: a renamed kernel" "$tmp/berttiny-train.ll" "_backward) ====="
"$fxc" --device=cpu --mode=train --emit=obj -o "$tmp/again.o" "$fx/block.pt2" &&
  same "cpu --emit=obj is deterministic" "$tmp/block-train.o" "$tmp/again.o"
exit $fail
