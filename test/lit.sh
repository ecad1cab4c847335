#!/usr/bin/env bash
# The lit-style code generation tests (test/codegen/*.test, docs/testing.md): each file holds
# its input (a .fxg graph or loop IR: every line not starting with "//"), "// RUN:" lines and
# FileCheck lines. A RUN line is a bash pipeline with these substitutions:
#   %fxc    the fxc under test          %s     the .test file (FileCheck's check file)
#   %input  the input, written to %t.fxg (text starting with "{") or %t.lir
#   %t      a scratch path for this test   FileCheck, %ptxas  the tools ($FILECHECK, $PTXAS)
# "// REQUIRES: ptxas" skips a test (reported as SKIP, never as ok) when ptxas is missing.
# tools/update-codegen-checks.py rewrites the CHECK lines from fxc's current output.
# Usage: lit.sh <fxc> [test/codegen/NAME.test ...]
set -u
fxc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); shift
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
filecheck=$(filecheck_path)
[ -n "$filecheck" ] || { bad "FileCheck not found (llvm-19-tools; set FILECHECK)"; exit 1; }
ptxas=${PTXAS:-}
[ -x "$ptxas" ] || ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=("$src"/test/codegen/*.test)
passed=0 skipped=0
for test in "${tests[@]}"; do
  name=$(basename "$test" .test)
  if grep -q '^// REQUIRES: ptxas' "$test" && [ ! -x "$ptxas" ]; then
    echo "SKIP $name: ptxas not found"; skipped=$((skipped + 1)); continue
  fi
  t=$tmp/$name
  body=$(grep -v '^//' "$test")
  if [ "$(printf '%s' "$body" | sed -n '/[^[:space:]]/{p;q}' | cut -c1)" = "{" ]; then input=$t.fxg; else input=$t.lir; fi
  printf '%s\n' "$body" >"$input"
  # RUN lines, a trailing backslash joining the next RUN line.
  runs=$(sed -n 's|^// RUN: \{0,1\}||p' "$test" | awk '{ if (sub(/\\$/, "")) { line = line $0 } else { print line $0; line = "" } }')
  [ -n "$runs" ] || { bad "$name: no RUN line"; continue; }
  ok_test=1
  while IFS= read -r run; do
    cmd=${run//%fxc/$fxc}
    cmd=${cmd//%input/$input}
    cmd=${cmd//%ptxas/$ptxas}
    cmd=${cmd//%s/$test}
    cmd=${cmd//%t/$t}
    cmd=$(printf '%s' "$cmd" | sed "s|\\bFileCheck\\b|$filecheck|g")
    if ! (cd "$tmp" && bash -o pipefail -c "$cmd") >"$t.out" 2>&1; then
      bad "$name: $run" "$(cat "$t.out")"; ok_test=0; break
    fi
  done <<<"$runs"
  [ $ok_test = 1 ] && { ok "$name"; passed=$((passed + 1)); }
done
echo "lit: $passed passed, $skipped skipped, $((${#tests[@]} - passed - skipped)) failed"
exit $fail
