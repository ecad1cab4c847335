#!/usr/bin/env bash
# The error corpus: every test/error/<case>.* input must make fxc exit 1 with the diagnostic
# in <case>.expected, and never crash. Usage: error.sh <path-to-fxc>
set -u
fxc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
dir=$src/test/error
fail=0; n=0; skipped=0
no_llvm=0; "$fxc" --version 2>&1 | grep -q "built without LLVM" && no_llvm=1
. "$src/test/lib/common.sh"
for exp in "$dir"/*.expected; do
  case_name=$(basename "$exp" .expected)
  input=$(ls "$dir/$case_name".* | grep -v '\.expected$' | grep -v '\.args$' | grep -v '\.requires$' | head -n 1)
  if [ -z "$input" ]; then bad "$case_name: no input file"; continue; fi
  # <case>.requires "llvm": the case needs the code generator; a build without LLVM (the
  # sanitizer build) says so and leaves it to the ctest run of the full build.
  if [ -f "$dir/$case_name.requires" ] && grep -qx llvm "$dir/$case_name.requires" && [ "$no_llvm" = 1 ]; then
    echo "not run here (needs LLVM): $case_name"; skipped=$((skipped + 1)); continue
  fi
  args=(--emit=fx -o /dev/null)
  [ -f "$dir/$case_name.args" ] && read -r -a args < "$dir/$case_name.args"
  n=$((n + 1))
  out=$(cd "$dir" && "$fxc" "${args[@]}" "$(basename "$input")" 2>&1 >/dev/null)
  status=$?
  want=$(cat "$exp")
  if [ "$status" -ne 1 ]; then
    bad "$case_name: exit status $status (want 1): $out"
  elif [[ "$out" != *"$want"* ]]; then
    bad "$case_name: message"; echo "  got:  $out"; echo "  want: $want"
  elif [ "$(printf '%s\n' "$out" | grep -c 'error:')" -ne 1 ]; then
    bad "$case_name: expected exactly one diagnostic, got: $out"
  fi
done
[ "$n" -gt 0 ] || { bad "no cases in $dir"; exit 1; }
[ $fail -eq 0 ] && echo "error corpus: $n cases ok ($skipped need LLVM)"
exit $fail
