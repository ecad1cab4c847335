#!/usr/bin/env bash
# Golden tests of the inductor backend: the kernels and extern calls each fixture becomes
# (ir_post_fusion.txt against test/golden/inductor_<name>.check, with FileCheck), and the CPU
# kernel ABI in kernels/<name>.ll. Usage: inductor_golden.sh <fxc>
# After an intended change, regenerate with test/golden/update_inductor_checks.sh <fxc>.
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
filecheck=$(filecheck_path)
if [ -z "$filecheck" ]; then bad "FileCheck not found (llvm-19-tools)"; exit 1; fi
for name in mlp norms block; do
  if ! "$fxc" --backend=inductor --device=cpu --run "$src/test/fixtures/$name.pt2" \
      --debug-dir="$tmp/$name" >"$tmp/$name.out" 2>&1; then
    bad "$name: fxc failed" "$(head -5 "$tmp/$name.out")"; continue
  fi
  post=$(find "$tmp/$name" -name ir_post_fusion.txt | head -1)
  if "$filecheck" "$src/test/golden/inductor_$name.check" --input-file="$post"; then
    ok "$name kernels"
  else
    bad "$name kernels"
  fi
  # Every kernel is a JIT entry point taking the argument array and its row range.
  for ll in $(find "$tmp/$name" -path '*kernels/*.ll' | sort); do
    k=$(basename "$ll" .ll)
    if printf 'CHECK: define void @%s(ptr %%args, i64 %%xbegin, i64 %%xend)\nCHECK: call void @%s.body(\n' "$k" "$k" |
        "$filecheck" /dev/stdin --input-file="$ll"; then :
    else bad "$name: $k.ll"; fi
  done
done
exit $fail
