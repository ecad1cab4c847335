#!/usr/bin/env bash
# On the GPU: every fixture, both exports, inference and train, through inductor on
# --device=cuda reproduces PyTorch's outputs and gradients; then one fixture run under
# compute-sanitizer memcheck. Usage: fixtures_cuda.sh <fxc>
set -u
fxc=$1
root=$(cd "$(dirname "$0")/../../.." && pwd)
fail=0
FXC_DEVICE=cuda bash "$root/test/fixtures_e2e.sh" "$fxc" inductor || fail=1
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$cs" ]; then
  fx=$root/test/fixtures
  out=$("$cs" --tool memcheck --error-exitcode 3 "$fxc" --device=cuda --run --inputs "$fx/block.io.safetensors" \
        --expect "$fx/block.io.safetensors" "$fx/block.pt2" 2>&1); st=$?
  echo "$out" | tail -5
  if echo "$out" | grep -q "Device not supported"; then echo "N/A  memcheck: device not supported here"
  elif [ $st -eq 0 ] && echo "$out" | grep -q "ERROR SUMMARY: 0 errors"; then echo "ok   memcheck block.pt2: 0 errors"
  else echo "FAIL memcheck block.pt2 (exit $st)"; fail=1; fi
fi
exit $fail
