#!/usr/bin/env bash
# The CUDA plan without a GPU: --device=cuda --emit=ptx cross-compiles, and ir_post_fusion.txt
# shows the extern calls the device would run (cuBLASLt epilogues, cuDNN convolutions), checked
# against test/golden/cuda_plan_<name>.check with FileCheck. Usage: cuda_plan.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
filecheck=$(command -v "${FILECHECK:-FileCheck-19}" || command -v FileCheck || true)
if [ -z "$filecheck" ]; then echo "FAIL FileCheck not found (llvm-19-tools)"; exit 1; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
for name in mlp block convnet; do
  if ! "$fxc" --device=cuda --emit=ptx -o "$tmp/$name.ptx" --debug-dir="$tmp/$name" \
      "$src/test/fixtures/$name.pt2" >"$tmp/$name.out" 2>&1; then
    echo "FAIL $name: fxc failed"; sed 's/^/     /' "$tmp/$name.out" | head -5; fail=1; continue
  fi
  post=$(find "$tmp/$name" -name ir_post_fusion.txt | head -1)
  if "$filecheck" "$src/test/golden/cuda_plan_$name.check" --input-file="$post"; then
    echo "ok   $name CUDA plan"
  else
    echo "FAIL $name CUDA plan"; fail=1
  fi
done
# The fusion log names each folded activation.
if "$fxc" --device=cuda --emit=ptx -o "$tmp/m.ptx" --log=fusion "$src/test/fixtures/mlp.pt2" 2>&1 |
    grep -q "epilogue: relu = relu_bias of linear (cuBLASLt)"; then echo "ok   fusion log names the epilogue"
else echo "FAIL fusion log: no 'epilogue: relu = relu_bias of linear'"; fail=1; fi
exit $fail
