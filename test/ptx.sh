#!/usr/bin/env bash
# Cross-compilation for CUDA on a machine without a GPU: every fixture (both exports, inference
# and train) compiles with --device=cuda --emit=ptx, and every kernel's PTX assembles with
# ptxas -arch=sm_90; FileCheck on the PTX of the kernel kinds (test/golden/ptx_*.check).
# Usage: ptx.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
ptxas=${PTXAS:-}
[ -x "$ptxas" ] || ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ ! -x "$ptxas" ]; then echo "FAIL ptxas not found (CUDA Toolkit at /usr/local/cuda)"; exit 1; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; kernels=0
for g in "$fx"/*.pt2; do
  name=$(basename "$g" .pt2)
  for mode in inference train; do
    [ $mode = train ] && [ ! -f "$fx/${name%.core}.grad.safetensors" ] && continue
    d=$tmp/$name-$mode
    if ! "$fxc" --device=cuda --emit=ptx --mode=$mode --debug-dir="$d" -o "$d.ptx" "$g" >"$tmp/out" 2>&1; then
      echo "FAIL $name $mode: fxc"; sed 's/^/     /' "$tmp/out" | head -5; fail=1; continue
    fi
    n=0
    for p in $(find "$d" -name '*.ptx' | sort); do
      n=$((n + 1))
      if ! "$ptxas" -arch=sm_90 "$p" -o "$tmp/k.cubin" 2>"$tmp/err"; then
        echo "FAIL $name $mode: ptxas $(basename "$p")"; head -5 "$tmp/err"; fail=1
      fi
    done
    grep -q "^\.visible \.entry" "$d.ptx" || { echo "FAIL $name $mode: --emit=ptx output has no kernel entry"; fail=1; }
    kernels=$((kernels + n))
    echo "ok   $name $mode: $n kernels assemble"
  done
done
# A bf16 graph (test/graphs/norms_bf16.fxg): narrow loads and stores, f32 compute.
d=$tmp/norms_bf16
if "$fxc" --device=cuda --emit=ptx --debug-dir="$d" -o "$d.ptx" "$src/test/graphs/norms_bf16.fxg" >"$tmp/out" 2>&1; then
  n=0
  for p in $(find "$d" -name '*.ptx' | sort); do
    n=$((n + 1))
    "$ptxas" -arch=sm_90 "$p" -o "$tmp/k.cubin" 2>"$tmp/err" || { echo "FAIL norms_bf16: ptxas $(basename "$p")"; head -5 "$tmp/err"; fail=1; }
  done
  kernels=$((kernels + n)); echo "ok   norms_bf16: $n kernels assemble"
else
  echo "FAIL norms_bf16: fxc"; sed 's/^/     /' "$tmp/out" | head -5; fail=1
fi
[ $kernels -gt 0 ] || { echo "FAIL no kernels"; fail=1; }
# Warp-shuffle block reductions in the norms kernel (FileCheck on the PTX).
filecheck=$(command -v "${FILECHECK:-FileCheck-19}" || command -v FileCheck || true)
if [ -z "$filecheck" ]; then echo "FAIL FileCheck not found (llvm-19-tools)"; fail=1
elif "$filecheck" "$src/test/golden/ptx_norms.check" --input-file="$tmp/norms-inference.ptx"; then
  echo "ok   FileCheck norms PTX: warp-shuffle reductions"
else echo "FAIL FileCheck norms PTX: warp-shuffle reductions"; fail=1; fi
# 16-byte vector accesses: a pointwise kernel (mlp), a persistent row (norms), bf16 (FileCheck).
if [ -n "$filecheck" ]; then
  for pre in POINTWISE:mlp-inference PERSISTENT:norms-inference BF16:norms_bf16; do
    if "$filecheck" "$src/test/golden/ptx_vector.check" --check-prefix="${pre%%:*}" \
        --input-file="$tmp/${pre#*:}.ptx"; then
      echo "ok   FileCheck ${pre#*:} PTX: vector accesses (${pre%%:*})"
    else echo "FAIL FileCheck ${pre#*:} PTX: vector accesses (${pre%%:*})"; fail=1; fi
  done
fi
# The short-row form (a thread per row): convnet at its benchmark size, 1M pooling rows of 4.
d=$tmp/convnet_bench
if "$fxc" --device=cuda --emit=ptx --debug-dir="$d" -o "$d.ptx" "$src/bench/models/convnet.f32.fxg" >"$tmp/out" 2>&1; then
  n=0
  for p in $(find "$d" -name '*.ptx' | sort); do
    n=$((n + 1))
    "$ptxas" -arch=sm_90 "$p" -o "$tmp/k.cubin" 2>"$tmp/err" || { echo "FAIL convnet.f32: ptxas $(basename "$p")"; head -5 "$tmp/err"; fail=1; }
  done
  kernels=$((kernels + n)); echo "ok   convnet.f32 (bench): $n kernels assemble"
  if [ -n "$filecheck" ] && "$filecheck" "$src/test/golden/ptx_short_row.check" --check-prefix=SHORTROW \
      --input-file="$d.ptx"; then
    echo "ok   FileCheck convnet.f32 PTX: a thread per short row (SHORTROW)"
  else echo "FAIL FileCheck convnet.f32 PTX: a thread per short row (SHORTROW)"; fail=1; fi
else
  echo "FAIL convnet.f32: fxc"; sed 's/^/     /' "$tmp/out" | head -5; fail=1
fi
echo "$kernels kernels checked with ptxas"
exit $fail
