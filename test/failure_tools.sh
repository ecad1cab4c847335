#!/usr/bin/env bash
# The failure tools end to end: planted bugs (--inject-bug) in an op's generated code are found
# by --bisect (stage inductor, first diverging node that op) and shrunk by --minify to a repro
# of at most 3 nodes including it, whose repro.sh fails with the bug and passes without it;
# the same for the MLP example in train mode. Usage: failure_tools.sh <fxc>
set -u
fxc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
bad_out() { bad "$1" "$(tail -12 "$tmp/out" 2>/dev/null)"; } # bad, then the end of $tmp/out

bisect_case() { # bisect_case <label> <node> <args...>: <node> is the expected first diverging node's op
  local label=$1 node=$2; shift 2
  "$fxc" --bisect "$@" >"$tmp/out" 2>&1; local st=$?
  if [ $st -eq 1 ] && [ "$(tail -n 1 "$tmp/out")" = "first failing stage: inductor" ] &&
     grep -q "^first diverging node: ${node}[_0-9]* (aten.${node}" "$tmp/out"; then ok "bisect $label"
  else bad_out "bisect $label (exit $st)"; fi
}
minify_case() { # minify_case <label> <op> <args...>: the repro must keep a node of <op>
  local label=$1 op=$2; shift 2
  local d=$tmp/min_$label; mkdir -p "$d"
  "$fxc" --minify --debug-dir="$d" "$@" >"$tmp/out" 2>&1; local st=$?
  local n; n=$(sed -n 's/^minified to \([0-9]*\) nodes\{0,1\}$/\1/p' "$tmp/out")
  if [ $st -ne 1 ] || [ -z "$n" ] || [ "$n" -gt 3 ]; then bad_out "minify $label: exit $st, nodes '${n}'"; return; fi
  if ! "$fxc" --emit=fx "$d/minifier/repro.fxg" | grep -q "aten.$op"; then bad_out "minify $label: repro has no $op"; return; fi
  if FXC="$fxc" sh "$d/minifier/repro.sh" >/dev/null 2>&1; then bad_out "minify $label: repro.sh passes with the bug"; return; fi
  sed 's/ --inject-bug=[^ ]*//' "$d/minifier/repro.sh" > "$d/minifier/fixed.sh"
  if ! FXC="$fxc" sh "$d/minifier/fixed.sh" >"$tmp/out" 2>&1; then bad_out "minify $label: repro fails without the bug"; return; fi
  ok "minify $label ($n nodes; repro.sh fails with the bug, passes without)"
}

# convnet has relus; the transformer block has none (its GELU is the tanh form, so the bug is
# planted in tanh and the first diverging node of the user's graph is the gelu it decomposes).
for kind in accuracy compile_error runtime_error; do
  bisect_case "convnet $kind" relu --inject-bug=relu:$kind "$fx/convnet.pt2"
  minify_case "convnet_$kind" relu --inject-bug=relu:$kind "$fx/convnet.pt2"
  bisect_case "block $kind" gelu --inject-bug=tanh:$kind "$fx/block.pt2"
  minify_case "block_$kind" gelu --inject-bug=tanh:$kind "$fx/block.pt2"
done
mlp_small=$tmp/mlp_small.fxg
sed 's/1024/64/g' "$src/examples/mlp.fxg" > "$mlp_small"
for kind in accuracy compile_error runtime_error; do
  bisect_case "mlp train $kind" relu --mode=train --inject-bug=relu:$kind "$mlp_small"
  minify_case "mlp_train_$kind" relu --mode=train --inject-bug=relu:$kind "$mlp_small"
done

# FXC_REPRO_LEVEL: 1 writes the unminified repro on a failure, 2 minifies it, 4 also minifies
# accuracy failures; FXC_REPRO_AFTER=aot minifies the failing graph after AOT autograd.
lvl() { # lvl <label> <want: repro|minified|none> <env...> -- <fxc args...>
  local label=$1 want=$2; shift 2
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  local d=$tmp/lvl_$label; mkdir -p "$d"
  (cd "$d" && env "${envs[@]}" "$fxc" "$@" >"$tmp/out" 2>&1)
  local st=$?
  case $want in
    repro) [ $st -eq 1 ] && [ -s "$d/minifier/repro.fxg" ] && ! grep -q "minified to" "$tmp/out" ;;
    minified) [ $st -eq 1 ] && [ -s "$d/minifier/repro.fxg" ] && grep -q "^minified to 1 node$" "$tmp/out" ;;
  esac && ok "$label" || bad_out "$label (exit $st)"
}
lvl "FXC_REPRO_LEVEL=1 writes the repro" repro FXC_REPRO_LEVEL=1 -- --run --inject-bug=relu:runtime_error "$fx/convnet.pt2"
lvl "FXC_REPRO_LEVEL=2 minifies a run-time error" minified FXC_REPRO_LEVEL=2 -- --run --inject-bug=relu:runtime_error "$fx/convnet.pt2"
lvl "FXC_REPRO_LEVEL=4 minifies an accuracy failure" minified FXC_REPRO_LEVEL=4 -- --run --inject-bug=relu:accuracy "$fx/convnet.pt2"
lvl "FXC_REPRO_AFTER=aot minifies the post-AOT graph" minified FXC_REPRO_AFTER=aot -- --minify --mode=train --inject-bug=relu:accuracy "$fx/mlp.pt2"
check "FXC_REPRO_LEVEL=9 is a usage error" 2 env FXC_REPRO_LEVEL=9 "$fxc" --run "$fx/mlp.pt2"

# --check-accuracy judges every backend against the float64 reference.
for b in eager aot_eager aot_eager_decomp_partition inductor; do
  "$fxc" --check-accuracy --backend=$b "$fx/convnet.pt2" >"$tmp/out" 2>&1 && grep -q "^output_0: ok (RMSE vs float64" "$tmp/out" &&
    ok "--check-accuracy --backend=$b passes" || bad_out "--check-accuracy --backend=$b"
done
# A graph that writes into its input: each run of the check starts from the inputs as given.
cat >"$tmp/mutates.fxg" <<'EOF'
{"format": "fxg", "version": 1, "name": "mutates",
 "inputs": [{"name": "x", "dtype": "f32", "shape": [4, 6]}, {"name": "y", "dtype": "f32", "shape": [6]}],
 "nodes": [{"name": "a", "target": "aten.mul_.Tensor", "args": [{"ref": "x"}, {"ref": "y"}]},
           {"name": "b", "target": "aten.add.Tensor", "args": [{"ref": "x"}, {"ref": "a"}]}],
 "outputs": ["b"]}
EOF
for b in eager inductor; do
  "$fxc" --check-accuracy --backend=$b "$tmp/mutates.fxg" >"$tmp/out" 2>&1 && grep -q "^output_0: ok (RMSE vs float64" "$tmp/out" &&
    ok "--check-accuracy --backend=$b on a graph that mutates its input" || bad_out "--check-accuracy --backend=$b, input mutated"
done
"$fxc" --check-accuracy --backend=inductor --inject-bug=relu:accuracy "$fx/convnet.pt2" >"$tmp/out" 2>&1
[ $? -eq 1 ] && grep -q "^output_0: FAIL (RMSE vs float64" "$tmp/out" && ok "--check-accuracy catches the planted accuracy bug" || bad_out "--check-accuracy with a planted bug"

"$fxc" --bisect "$fx/block.pt2" >"$tmp/out" 2>&1
if [ $? -eq 0 ] && [ "$(tail -n 1 "$tmp/out")" = "all stages match eager" ]; then ok "bisect without a bug passes"; else bad_out "bisect without a bug"; fi
"$fxc" --minify "$fx/mlp.pt2" >"$tmp/out" 2>&1
if [ $? -eq 0 ] && grep -q "no failure to minify" "$tmp/out"; then ok "minify without a bug has nothing to do"; else bad_out "minify without a bug"; fi
check "bad --inject-bug kind is a usage error" 2 "$fxc" --inject-bug=relu:typo --run "$fx/mlp.pt2"
exit $fail
