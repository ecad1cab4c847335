#!/usr/bin/env bash
# Golden tests of the inductor backend: the kernels and extern calls each fixture becomes
# (ir_post_fusion.txt against test/golden/inductor_<name>.check, with FileCheck), and the CPU
# kernel ABI in kernels/<name>.ll. Usage: inductor_golden.sh <fxc>
# After an intended change, regenerate with test/golden/update_inductor_checks.sh <fxc>.
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
filecheck=$(command -v "${FILECHECK:-FileCheck-19}" || command -v FileCheck || true)
if [ -z "$filecheck" ]; then echo "FAIL FileCheck not found (llvm-19-tools)"; exit 1; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
for name in mlp norms block; do
  if ! "$fxc" --backend=inductor --device=cpu --run "$src/test/fixtures/$name.pt2" \
      --debug-dir="$tmp/$name" >"$tmp/$name.out" 2>&1; then
    echo "FAIL $name: fxc failed"; sed 's/^/     /' "$tmp/$name.out" | head -5; fail=1; continue
  fi
  post=$(find "$tmp/$name" -name ir_post_fusion.txt | head -1)
  if "$filecheck" "$src/test/golden/inductor_$name.check" --input-file="$post"; then
    echo "ok   $name kernels"
  else
    echo "FAIL $name kernels"; fail=1
  fi
  # Every kernel is a JIT entry point taking the argument array and its row range.
  for ll in $(find "$tmp/$name" -path '*kernels/*.ll' | sort); do
    k=$(basename "$ll" .ll)
    if printf 'CHECK: define void @%s(ptr %%args, i64 %%xbegin, i64 %%xend)\nCHECK: call void @%s.body(\n' "$k" "$k" |
        "$filecheck" /dev/stdin --input-file="$ll"; then :
    else echo "FAIL $name: $k.ll"; fail=1; fi
  done
done
exit $fail
