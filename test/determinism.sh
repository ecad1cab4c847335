#!/usr/bin/env bash
# Same compile, same bytes, on any number of threads: a real torchvision export (EfficientNet
# MBConv blocks at width 0.25, test/graphs/effnet_mini.core.pt2) compiled for CUDA (--emit=ptx:
# every kernel's code generation runs on the compiler's pool) in train and inference mode and for
# the CPU (--emit=obj and an .fxo: kernels compile to objects on the pool) with --threads=1, 2 and
# 8 (and twice at 8); each compile must exit 0 and give the bytes of the --threads=1 compile.
# tools/tsan.sh runs it under ThreadSanitizer (FXC_DETERMINISM_QUICK=1: two thread counts only).
# Usage: determinism.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
g=$src/test/graphs/effnet_mini.core.pt2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
threads="1 2 8 8"
[ "${FXC_DETERMINISM_QUICK:-0}" = 1 ] && threads="1 8"

# same_bytes <label> <ext> <fxc args...>: compiles once per thread count, compares with the first.
same_bytes() {
  local label=$1 ext=$2; shift 2
  local n i=0 ref=""
  for n in $threads; do
    i=$((i + 1))
    local out=$tmp/$label.$i.$ext
    "$fxc" --no-cache --threads="$n" -o "$out" "$@" "$g" >"$tmp/log" 2>&1
    local rc=$?
    if [ $rc -ne 0 ]; then bad "$label --threads=$n: exit $rc, want 0" "$(tail -8 "$tmp/log")"; return; fi
    if [ -s "$tmp/log" ]; then bad "$label --threads=$n: unexpected output" "$(head -8 "$tmp/log")"; return; fi
    if [ -z "$ref" ]; then ref=$out; continue; fi
    if ! cmp -s "$ref" "$out"; then
      bad "$label --threads=$n: output differs from --threads=1" "$(cmp "$ref" "$out" 2>&1)"; return
    fi
  done
  ok "$label: exit 0 and the same bytes with --threads=$(echo $threads | tr ' ' ,)"
}

same_bytes cuda-train-ptx ptx --device=cuda --mode=train --emit=ptx
same_bytes cuda-inference-ptx ptx --device=cuda --emit=ptx
same_bytes cpu-inference-obj o --device=cpu --emit=obj
same_bytes cpu-train-fxo fxo --device=cpu --mode=train

# The train PTX is one module that ptxas accepts (its cat kernels are PTX 8.1 where their
# parameters outgrow 7.8's 0x1100 bytes, as in the full EfficientNet-B0).
PTXAS=${PTXAS:-}
[ -x "$PTXAS" ] || PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$PTXAS" ] && [ -s "$tmp/cuda-train-ptx.1.ptx" ]; then
  check "ptxas -arch=sm_90 accepts the train PTX" 0 "$PTXAS" -arch=sm_90 "$tmp/cuda-train-ptx.1.ptx" -o "$tmp/t.cubin"
else missing "ptxas on the train PTX" "ptxas not found (PTXAS unset)"; fi

# --threads is a count of threads: anything else is a usage error.
check "--threads=0 is a usage error" 2 "$fxc" --threads=0 --emit=fx "$g"
check "--threads=x is a usage error" 2 "$fxc" --threads=x --emit=fx "$g"
exit $fail
