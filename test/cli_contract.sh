#!/usr/bin/env bash
# The command line's contract (issue 16): a repeatable option never swallows the graph; enum
# values and unknown options get clang-grade errors with the valid values and a "did you mean";
# options the action does not use are warned about ("argument unused", an error under -Werror);
# '-' reads the graph from stdin; --emit=fxg -o - is refused when weights need a file; --version,
# --color, the minifier's grammar, --time-passes' note on parallel passes; the man page renders
# without raw markup and the docs stand alone (no link out of the repository).
# Usage: cli_contract.sh <fxc>
set -u
fxc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
export FXC_CACHE_DIR=$tmp/cache

# --- a repeatable option takes one value per occurrence, never the positional graph
check "--plugin does not swallow the graph" 1 "$fxc" --plugin="$tmp/nope.so" --emit=fx "$fx/mlp.pt2"
has "--plugin names the missing library, not 'no input graph'" "$tmp/err" "nope.so"
hasnt "--plugin: the graph was not taken as a plugin" "$tmp/err" "no input graph"
check "--plugin LIB GRAPH (separate words)" 1 "$fxc" --run --plugin "$tmp/nope.so" "$fx/mlp.pt2"
hasnt "--plugin LIB GRAPH: the graph was not taken as a plugin" "$tmp/err" "no input graph"

# --- enumerated values: the valid ones listed, the closest suggested, no CLI11 internals
check "--backend=indcutor is a usage error" 2 "$fxc" --backend=indcutor --emit=fx "$fx/mlp.pt2"
has "--backend=indcutor: the message" "$tmp/err" \
  "invalid value 'indcutor' for '--backend' (did you mean 'inductor'?); valid values: eager, aot_eager, aot_eager_decomp_partition, inductor"
hasnt "--backend=indcutor: no CLI11 internals" "$tmp/err" "->"
check "--backend=0 is not an index" 2 "$fxc" --backend=0 --emit=fx "$fx/mlp.pt2"
has "--backend=0: invalid value" "$tmp/err" "invalid value '0' for '--backend'"
check "--device=cdua" 2 "$fxc" --device=cdua --emit=fx "$fx/mlp.pt2"
has "--device=cdua suggests cuda" "$tmp/err" "(did you mean 'cuda'?)"
check "--mode=trian" 2 "$fxc" --mode=trian --emit=fx "$fx/mlp.pt2"
has "--mode=trian suggests train" "$tmp/err" "did you mean 'train'?"
check "--emit=ptxx" 2 "$fxc" --emit=ptxx "$fx/mlp.pt2"
has "--emit=ptxx suggests ptx" "$tmp/err" "did you mean 'ptx'?"
check "--diagnostics=jsno" 2 "$fxc" --diagnostics=jsno --emit=fx "$fx/mlp.pt2"
has "--diagnostics=jsno suggests json" "$tmp/err" "did you mean 'json'?"
check "--color=sometimes" 2 "$fxc" --color=sometimes --emit=fx "$fx/mlp.pt2"
has "--color lists its values" "$tmp/err" "valid values: auto, always, never"
check "--backend=zzzzzzzz: no suggestion when nothing is close" 2 "$fxc" --backend=zzzzzzzz "$fx/mlp.pt2"
hasnt "no suggestion for a far value" "$tmp/err" "did you mean"
check "unknown option" 2 "$fxc" --bakcend=eager --emit=fx "$fx/mlp.pt2"
has "unknown option: named, with a suggestion" "$tmp/err" "unknown argument: '--bakcend'; did you mean '--backend'?"
check "unknown short option" 2 "$fxc" -Q "$fx/mlp.pt2"
has "unknown short option named" "$tmp/err" "unknown argument: '-Q'"
check "two graphs" 2 "$fxc" --emit=fx "$fx/mlp.pt2" "$fx/norms.pt2"
has "two graphs: the extra one named" "$tmp/err" "unexpected argument '$fx/norms.pt2'"
check "a planned flag is not yet supported" 2 "$fxc" --dynamic=x:0 "$fx/mlp.pt2"
has "planned flag: not yet supported" "$tmp/err" "--dynamic is not yet supported"
check "--dtype=int8" 2 "$fxc" --dtype=int8 --emit=fx "$fx/mlp.pt2"
has "--dtype lists its values" "$tmp/err" "invalid value 'int8' for '--dtype'; valid values: bf16, f16"
check "--conv-layout=nwhc" 2 "$fxc" --conv-layout=nwhc --emit=fx "$fx/mlp.pt2"
has "--conv-layout lists its values" "$tmp/err" "invalid value 'nwhc' for '--conv-layout' (did you mean 'nhwc'?); valid values: auto, nchw, nhwc"

# --- options the action does not use: a warning each, exit unchanged; -Werror makes it an error
warns() { # warns <description> <message> <fxc args...>: exit 0 and the warning, exit 2 under -Werror
  local desc=$1 msg=$2; shift 2
  check "$desc: exit 0" 0 "$fxc" "$@"
  has "$desc: warned" "$tmp/err" "fxc: warning: $msg"
  check "$desc: -Werror makes it an error" 2 "$fxc" -Werror "$@"
  has "$desc: -Werror's error" "$tmp/err" "fxc: error: $msg"
}
warns "-o with --run" "argument unused with --run (it writes no output file" \
  --device=cpu --run -o "$tmp/run.out" "$fx/mlp.pt2"
[ -e "$tmp/run.out" ] && bad "-o with --run wrote a file" || ok "-o with --run writes nothing"
warns "--run with --emit=fx" "argument unused with --emit=fx (it writes the graph and runs nothing): '--run'" \
  --run --emit=fx -o "$tmp/g.txt" "$fx/mlp.pt2"
warns "--bench with --bisect" "argument unused with --bisect: '--bench'" \
  --device=cpu --backend=eager --bench --bisect "$fx/norms.pt2"
warns "--cuda-graphs on the CPU" "argument unused with --device=cpu: '--cuda-graphs'" \
  --device=cpu --cuda-graphs --backend=eager --run "$fx/norms.pt2"
warns "--allow-tf32 on the CPU" "argument unused with --device=cpu: '--allow-tf32'" \
  --device=cpu --allow-tf32 --backend=eager --run "$fx/norms.pt2"
check "--conv-layout on the CPU is used (oneDNN's layout)" 0 "$fxc" --device=cpu \
  --conv-layout=nchw --no-cache --run "$fx/norms.pt2"
hasnt "--conv-layout on the CPU: no warning" "$tmp/err" "warning"
warns "--rtol without --expect" "argument unused without --expect: '--rtol'" \
  --device=cpu --rtol=1e-3 --backend=eager --run "$fx/norms.pt2"
warns "--expect without a run" "argument unused without --run: '--expect" \
  --expect "$fx/norms.io.safetensors" --emit=fx -o "$tmp/n.txt" "$fx/norms.pt2"
check "a used option is not warned about" 0 "$fxc" --device=cpu --backend=eager --run \
  --inputs "$fx/norms.io.safetensors" --expect "$fx/norms.io.safetensors" --rtol=1e-3 "$fx/norms.pt2"
hasnt "no warning when every option is used" "$tmp/err" "warning"

# --- '-' reads the graph from standard input
check "stdin: --emit=fx from '-'" 0 sh -c "\"$fxc\" --emit=fx - < \"$fx/mlp.pt2\" > \"$tmp/stdin.txt\""
"$fxc" --emit=fx "$fx/mlp.pt2" > "$tmp/file.txt"
same "stdin gives the same readable graph as the file" "$tmp/stdin.txt" "$tmp/file.txt"
check "stdin: an .fxg graph runs" 0 sh -c "\"$fxc\" --device=cpu --backend=eager --run - < \"$src/test/graphs/fallback.fxg\""
check "stdin: the default action needs -o" 2 sh -c "\"$fxc\" - < \"$fx/mlp.pt2\""
has "stdin: -o asked for" "$tmp/err" "needs -o <file>"
check "stdin: bad bytes are named <stdin>" 1 sh -c "printf 'garbage' | \"$fxc\" --emit=fx -"
has "stdin: the diagnostic names <stdin>" "$tmp/err" "<stdin>: error:"
check "stdin: empty input" 1 sh -c "\"$fxc\" --emit=fx - < /dev/null"
has "stdin: empty input explained" "$tmp/err" "standard input is empty"

# --- --emit=fxg -o - never writes a file named '-.safetensors'
(cd "$tmp" && "$fxc" --emit=fxg -o - "$fx/convnet.pt2" >"$tmp/out" 2>"$tmp/err"); st=$?
[ "$st" -eq 2 ] && ok "--emit=fxg -o - with weights is a usage error" || bad "--emit=fxg -o -: exit $st, want 2"
has "--emit=fxg -o - explains" "$tmp/err" "give -o <file>.fxg"
[ -e "$tmp/-.safetensors" ] && bad "--emit=fxg -o - wrote '-.safetensors'" || ok "no '-.safetensors' written"

# --- --version names LLVM and CUDA support
check "--version" 0 "$fxc" --version
has "--version: fxc" "$tmp/out" "fxc version"
if grep -q "built without LLVM" "$tmp/out"; then ok "--version: a build without LLVM says so"
else has "--version: the LLVM version" "$tmp/out" "LLVM 19."; fi
has "--version: CUDA" "$tmp/out" "CUDA:"

# --- colored diagnostics: always, never, and auto off when stderr is no terminal
check "--color=always" 1 "$fxc" --color=always --emit=fx "$tmp/nope.pt2"
if grep -q $'\033\[0;1;31merror:' "$tmp/err"; then ok "--color=always: 'error:' in bold red"
else bad "--color=always: no color" "$(cat -v "$tmp/err")"; fi
check "--color=never" 1 "$fxc" --color=never --emit=fx "$tmp/nope.pt2"
if grep -q $'\033' "$tmp/err"; then bad "--color=never has escapes"; else ok "--color=never: plain"; fi
check "--color=auto (not a terminal)" 1 "$fxc" --emit=fx "$tmp/nope.pt2"
if grep -q $'\033' "$tmp/err"; then bad "--color=auto colored a pipe"; else ok "--color=auto: plain on a pipe"; fi
check "--color=always on a usage error" 2 "$fxc" --color=always --backend=x "$fx/mlp.pt2"
if grep -q $'\033\[0;1;31merror:' "$tmp/err"; then ok "usage errors are colored too"; else bad "usage error not colored"; fi
if command -v script >/dev/null; then
  script -qec "\"$fxc\" --emit=fx \"$tmp/nope.pt2\"" /dev/null > "$tmp/tty.txt" 2>&1
  if grep -q $'\033\[0;1;31merror:' "$tmp/tty.txt"; then ok "--color=auto colors a terminal"
  else bad "--color=auto on a terminal: no color" "$(cat -v "$tmp/tty.txt")"; fi
else missing "--color=auto on a terminal" "script not found (bsdutils)"; fi

# --- the minifier's grammar: "an accuracy failure", "1 node"
check "minify an accuracy bug" 1 env -C "$tmp" "$fxc" --device=cpu --minify --inject-bug=relu:accuracy "$fx/mlp.pt2"
has "minifier: 'an accuracy failure'" "$tmp/out" "minifying an accuracy failure"
has "minifier: '1 node'" "$tmp/out" "minified to 1 node"
hasnt "minifier: no '1 nodes'" "$tmp/out" "minified to 1 nodes"

# --- --time-passes explains that parallel passes can exceed their parent
if "$fxc" --version | grep -q "LLVM"; then
  check "--time-passes of a CUDA compile" 0 "$fxc" --time-passes --device=cuda --emit=ptx -o "$tmp/b.ptx" "$fx/block.pt2"
  has "--time-passes marks parallel passes" "$tmp/err" "[parallel]"
  has "--time-passes explains the sums" "$tmp/err" "can exceed their parent's time"
fi

# --- the man page renders without raw markup or control characters
if LC_ALL=C grep -nP '[\x00-\x08\x0b-\x1f\x7f]' "$src/man/fxc.1" > "$tmp/ctl"; then
  bad "man/fxc.1 holds control characters" "$(cat "$tmp/ctl")"
else ok "man/fxc.1: no control characters"; fi
if command -v groff >/dev/null; then
  # Blanks squeezed: justification spreads a line's spaces differently as lines come and go.
  groff -man -Tutf8 "$src/man/fxc.1" 2>/dev/null | sed 's/.\x08//g; s/  */ /g' > "$tmp/man.txt"
  if grep -nE '(^|[ (,])[BIR]--?[a-zA-Z][-a-zA-Z]*[BIR]\b' "$tmp/man.txt" > "$tmp/raw"; then
    bad "the rendered man page shows raw font markup" "$(cat "$tmp/raw")"
  else ok "the rendered man page has no raw font markup"; fi
  has "man page: CACHE renders --emit" "$tmp/man.txt" "(artifacts, --emit files"
else missing "the rendered man page" "groff not found (groff-base)"; fi

# --- the docs stand alone: every relative link of README.md and docs/ names a file of the clone
broken=""
for f in "$src/README.md" "$src"/docs/*.md; do
  while IFS= read -r link; do
    case "$link" in http*|\#*|mailto:*) continue ;; esac
    target=${link%%#*}
    [ -e "$(dirname "$f")/$target" ] || broken+="$f -> $link"$'\n'
  done < <(grep -oE '\]\([^) ]+\)' "$f" | sed 's/^](//; s/)$//')
done
if [ -z "$broken" ]; then ok "README and docs link only to files of the repository"
else bad "links out of the repository" "$broken"; fi
[ -s "$src/docs/design.md" ] && ok "docs/design.md holds the contract" || bad "docs/design.md missing"
hasnt "README does not point outside the clone" "$src/README.md" "../shared"
exit $fail
