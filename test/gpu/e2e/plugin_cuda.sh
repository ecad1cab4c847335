#!/usr/bin/env bash
# On the GPU: a plugin's CUDA kernel runs on the device buffers. Builds the example plugin
# (examples/custom_op) twice: as it is, and with its CPU kernel made to fail, so that a passing
# --device=cuda inductor run can only have used the CUDA kernel (the eager run, which must use the
# CPU kernel, fails with that build). Values are checked against the float64 formula.
# Usage: plugin_cuda.sh <fxc>
set -u
fxc=$1
root=$(cd "$(dirname "$0")/../../.." && pwd)
ex=$root/examples/custom_op
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
run() { # run <label> <expected status> <args...>
  local label=$1 want=$2; shift 2
  out=$("$@" 2>&1); local got=$?
  if [ $got -eq "$want" ]; then echo "ok   $label"
  else echo "FAIL $label (exit $got, want $want)"; echo "$out" | head -12 | sed 's/^/     /'; fail=1; fi
}
cc=${CC:-cc}
build() { "$cc" -shared -fPIC -O2 -I"$root/include" "$2" -o "$1" -ldl -lm -lpthread; }
build "$work/libsp.so" "$ex/scaled_softplus.c" || { echo "FAIL building the plugin with $cc"; exit 1; }
python3 - "$ex/scaled_softplus.c" "$work/nocpu.c" <<'EOF'
import re, sys
s = open(sys.argv[1]).read()
s, n = re.subn(r'(static int cpu\([^{]*\{)', r'\1\n  set_error(error, "CPU kernel disabled by the test"); return 1;', s, count=1)
assert n == 1
open(sys.argv[2], 'w').write(s)
EOF
build "$work/libnocpu.so" "$work/nocpu.c" || { echo "FAIL building the CPU-less plugin"; exit 1; }
io=(--inputs "$ex/softplus.inputs.safetensors" --expect "$ex/softplus.expected.safetensors")
run "cuda inductor with the plugin" 0 "$fxc" --plugin="$work/libsp.so" --device=cuda --run "${io[@]}" "$ex/softplus.fxg"
run "cuda inductor runs the CUDA kernel (CPU kernel disabled)" 0 \
  "$fxc" --plugin="$work/libnocpu.so" --device=cuda --run "${io[@]}" "$ex/softplus.fxg"
run "eager uses the CPU kernel (disabled: fails)" 1 \
  "$fxc" --plugin="$work/libnocpu.so" --backend=eager --device=cpu --run "${io[@]}" "$ex/softplus.fxg"
run "cuda inductor --check-accuracy" 0 "$fxc" --plugin="$work/libsp.so" --device=cuda --check-accuracy "$ex/softplus.fxg"
exit $fail
