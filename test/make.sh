#!/usr/bin/env bash
# Make and CI integration: examples/Makefile builds every example with make -j, rebuilds nothing
# when nothing changed and only the touched input's artifact otherwise (fxc -MD depfiles); -MF,
# -MT and escaping; outputs are byte-identical across runs (.fxo, depfiles, --emit); --diagnostics=json;
# examples/ci.sh passes on a good model and bisects and minifies a planted bug. Usage: make.sh <fxc>
set -u
fxc=$(realpath "$1")
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
unset FXC_LOGS FXC_LOGS_OUT FXC_COMPILE_DEBUG
export FXC_CACHE_DIR=$tmp/cache
fail=0
. "$src/test/lib/common.sh"
mtimes() { stat -c '%n %.9Y' "$@"; }

# examples/Makefile in a copy of examples/.
ex=$tmp/ex
mkdir -p "$ex"
cp "$src"/examples/Makefile "$src"/examples/*.fxg "$src"/examples/*.safetensors "$ex"/
graphs=$(cd "$ex" && ls *.fxg | sed 's/\.fxg$//')
n=$(echo "$graphs" | wc -w)
[ "$n" -ge 3 ] && ok "examples/ has $n graphs" || bad "examples/ has only $n graphs"
check "make -j4 builds every example" 0 make -C "$ex" -j4 FXC="$fxc"
for gname in $graphs; do
  [ -s "$ex/out/$gname.fxo" ] && [ -s "$ex/out/$gname.d" ] || bad "no out/$gname.fxo or out/$gname.d"
done
ok "every example has an artifact and a depfile"
has "block.d names the graph" "$ex/out/block.d" "out/block.fxo: \\"
has "block.d names its external weights file" "$ex/out/block.d" "  block.safetensors"
check "an unchanged tree is up to date (make -q)" 0 make -C "$ex" -q FXC="$fxc"
check "make again" 0 make -C "$ex" FXC="$fxc"
has "an unchanged tree rebuilds nothing" "$tmp/out" "Nothing to be done"
mkdir -p "$tmp/first" && cp "$ex"/out/* "$tmp/first/"
before=$(cd "$ex/out" && mtimes *.fxo)
sleep 1.1
touch "$ex/block.safetensors"
check "make -q sees the touched weights file" 1 make -C "$ex" -q FXC="$fxc"
check "make -j4 after touching block.safetensors" 0 make -C "$ex" -j4 FXC="$fxc"
after=$(cd "$ex/out" && mtimes *.fxo)
changed=$(diff <(echo "$before") <(echo "$after") | sed -n 's/^> \([^ ]*\) .*/\1/p' | tr '\n' ' ')
[ "$changed" = "block.fxo " ] && ok "touching a weights file rebuilds only its artifact" || bad "rebuilt: '$changed'"
before=$after
sleep 1.1
touch "$ex/norms.fxg"
check "make -j4 after touching norms.fxg" 0 make -C "$ex" -j4 FXC="$fxc"
after=$(cd "$ex/out" && mtimes *.fxo)
changed=$(diff <(echo "$before") <(echo "$after") | sed -n 's/^> \([^ ]*\) .*/\1/p' | tr '\n' ' ')
[ "$changed" = "norms.fxo " ] && ok "touching a graph rebuilds only its artifact" || bad "rebuilt: '$changed'"
check "clean and rebuild without the cache" 0 sh -c "make -C '$ex' clean && FXC_CACHE_DIR= make -C '$ex' -j4 FXC='$fxc' FXCFLAGS='--device=cpu --no-cache'"
for f in "$tmp"/first/*; do same "$(basename "$f") is byte-identical after a clean rebuild" "$f" "$ex/out/$(basename "$f")"; done

# -MF, -MT, escaping, and the usage errors of depfiles.
mkdir -p "$tmp/sp ace#1"
cp "$src/examples/block.fxg" "$src/examples/block.safetensors" "$tmp/sp ace#1/"
check "-MF and -MT" 0 "$fxc" --device=cpu -MD -MF "$tmp/dep.d" -MT mytarget -o "$tmp/b.fxo" "$tmp/sp ace#1/block.fxg"
printf 'mytarget: \\\n  %s \\\n  %s\n' "$tmp/sp\\ ace\\#1/block.fxg" "$tmp/sp\\ ace\\#1/block.safetensors" > "$tmp/dep.want"
same "the depfile escapes blanks and '#' for Make" "$tmp/dep.want" "$tmp/dep.d"
check "-MD with --emit=llvm" 0 "$fxc" --device=cpu --emit=llvm -MD -o "$tmp/n.ll" "$src/examples/norms.fxg"
has "the depfile of an --emit output" "$tmp/n.d" "$tmp/n.ll: \\"
check "-MD without an output file is a usage error" 2 "$fxc" --device=cpu --run -MD "$fx/norms.pt2"
has "the usage error says what is missing" "$tmp/err" "-MD needs an output file"
check "--run with -MF and -MT writes a depfile" 0 "$fxc" --device=cpu --run -MF "$tmp/run.d" -MT run "$fx/norms.pt2"
has "the --run depfile" "$tmp/run.d" "run: \\"

# Byte-identical outputs: two compiles without the cache, of each kind of output.
for emit in "" fx fxg llvm cpp obj; do
  ext=${emit:-fxo}
  for i in 1 2; do
    mkdir -p "$tmp/det$i"
    (cd "$tmp/det$i" && "$fxc" --device=cpu --no-cache ${emit:+--emit=$emit} -MD -o "block.$ext" "$tmp/ex/block.fxg") || bad "compile $ext ($i)"
  done
  same "--emit=${emit:-<default .fxo>} is byte-identical across runs" "$tmp/det1/block.$ext" "$tmp/det2/block.$ext"
  same "its depfile is byte-identical across runs" "$tmp/det1/block.d" "$tmp/det2/block.d"
done
if grep -qF "$tmp" "$tmp/det1/block.fxo"; then bad "the artifact holds a path"; else ok "the artifact holds no path"; fi

# --diagnostics=json: one object per diagnostic, for bad input, usage errors and failed checks.
check "json: a bad graph" 1 "$fxc" --diagnostics=json --emit=fx "$tmp/nope.pt2"
python3 - "$tmp/err" <<'PY' && ok "json: one object with file, severity and message" || bad "json diagnostic malformed"
import json, sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
assert len(lines) == 1, lines
d = json.loads(lines[0])
assert d["severity"] == "error" and d["file"].endswith("nope.pt2") and "cannot read" in d["message"], d
PY
check "json: a usage error" 2 "$fxc" --diagnostics=json --run -MD "$fx/norms.pt2"
python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).read()); assert d["severity"]=="error" and "-MD" in d["message"], d' "$tmp/err" \
  && ok "json: a usage error is one object" || bad "json usage error: $(cat "$tmp/err")"
check "json: a command-line error" 2 "$fxc" --diagnostics=json --frobnicate "$fx/norms.pt2"
python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).read()); assert d["severity"]=="error" and "frobnicate" in d["message"], d' "$tmp/err" \
  && ok "json: a command-line error is one object" || bad "json command-line error: $(cat "$tmp/err")"
check "json: a failed check" 1 "$fxc" --diagnostics=json --device=cpu --run --inject-bug=relu:accuracy \
  --inputs "$fx/mlp.io.safetensors" --expect "$fx/mlp.io.safetensors" "$fx/mlp.pt2"
python3 - "$tmp/err" <<'PY' && ok "json: a failed --expect is one object" || bad "json check failure: $(tail -2 "$tmp/err")"
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert any(o["severity"] == "error" and "do not match" in o["message"] for o in objs), objs
PY

# A crash (here: SIGABRT, as a failed assert raises) is an internal compiler error: exit 70,
# with a reproducer in $TMPDIR/fxc-crash-<pid>/.
mkdir -p "$tmp/ice"
TMPDIR=$tmp/ice "$fxc" --device=cpu --no-cache --bench "$fx/berttiny.pt2" >/dev/null 2>"$tmp/crash.err" &
p=$!
for _ in $(seq 200); do # until fxc has installed its handlers (SIGABRT is bit 6 of SigCgt)
  cgt=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$p/status" 2>/dev/null)
  [ -n "$cgt" ] && [ $((0x$cgt & 0x20)) -ne 0 ] && break
  sleep 0.02
done
kill -ABRT "$p"
wait "$p"
rc=$?
[ $rc -eq 70 ] && ok "a crash exits 70" || bad "a crash exited $rc"
has "a crash asks for a report" "$tmp/crash.err" "fxc: internal compiler error: aborted"
has "a crash says please report" "$tmp/crash.err" "please report this bug"
has "a crash names its reproducer" "$tmp/crash.err" "fxc: note: a reproducer was written to $tmp/ice/fxc-crash-$p/repro.sh"
cmp -s "$fx/berttiny.pt2" "$tmp/ice/fxc-crash-$p/berttiny.pt2" && [ -x "$tmp/ice/fxc-crash-$p/repro.sh" ] \
  && ok "the reproducer has the graph and repro.sh" || bad "no reproducer in $tmp/ice/fxc-crash-$p"
# FXC_INJECT_ICE (testing only) makes one on demand; repro.sh re-runs it (FXC_* variables kept).
(cd "$tmp" && FXC_INJECT_ICE=abort TMPDIR=$tmp/ice "$fxc" --device=cpu --no-cache -o "out dir.fxo" \
  "$ex/block.fxg" 2>"$tmp/ice.err"; echo $? >"$tmp/ice.rc")
[ "$(cat "$tmp/ice.rc")" = 70 ] && ok "an injected abort exits 70" || bad "injected abort: $(cat "$tmp/ice.rc")"
r=$(sed -n 's/^fxc: note: a reproducer was written to //p' "$tmp/ice.err")
[ -n "$r" ] && [ -L "$(dirname "$r")/block.safetensors" ] && [ -s "$(dirname "$r")/block.fxg" ] \
  && ok "the reproducer links the .fxg's weights" || bad "reproducer '$r': $(ls "$(dirname "$r")")"
check "repro.sh re-runs the crash" 70 env TMPDIR="$tmp/ice" sh "$r"
has "repro.sh's run crashes the same way" "$tmp/err" "fxc: internal compiler error: aborted"
check "json: an internal error" 70 env FXC_INJECT_ICE=exception TMPDIR=$tmp/ice "$fxc" \
  --diagnostics=json --device=cpu --no-cache "$fx/mlp.pt2"
python3 - "$tmp/err" <<'PY' && ok "json: an internal error names its reproducer" || bad "json ICE: $(cat "$tmp/err")"
import json, os, sys
d = json.loads(open(sys.argv[1]).read())
assert d["severity"] == "fatal" and "please report" in d["message"], d
assert os.access(d["repro"], os.X_OK) and os.path.isfile(os.path.join(os.path.dirname(d["repro"]), "mlp.pt2")), d
PY
check "json repro.sh re-runs the internal error" 70 env TMPDIR="$tmp/ice" sh "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["repro"])' "$tmp/err")"

# examples/ci.sh: green on a good model; on a planted bug, bisects, minifies and fails.
check "ci.sh passes on mlp" 0 env FXC="$fxc" OUT="$tmp/ci" bash "$src/examples/ci.sh" \
  "$fx/mlp.pt2" "$fx/mlp.io.safetensors" --device=cpu
has "ci.sh ran the artifact" "$tmp/out" "== ok"
check "ci.sh fails on a planted bug" 1 env FXC="$fxc" OUT="$tmp/ci_bug" bash "$src/examples/ci.sh" \
  "$fx/mlp.pt2" "$fx/mlp.io.safetensors" --device=cpu --inject-bug=relu:accuracy
has "ci.sh bisects to inductor" "$tmp/ci_bug/bisect.txt" "first failing stage: inductor"
[ -s "$tmp/ci_bug/minifier/repro.fxg" ] && [ -s "$tmp/ci_bug/minifier/repro.sh" ] \
  && ok "ci.sh leaves a minified repro" || bad "no minified repro in $tmp/ci_bug/minifier"
check "ci.sh passes the compile's exit status on" 1 env FXC="$fxc" OUT="$tmp/ci_bad" bash "$src/examples/ci.sh" \
  "$tmp/nope.pt2" "$fx/mlp.io.safetensors" --device=cpu

if [ $fail -eq 0 ]; then echo "make: all passed"; else echo "make: FAILED"; fi
exit $fail
