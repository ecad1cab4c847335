#!/usr/bin/env bash
# Fused attention on the H200 (issue 20, item 2), in ONE device call: scaled_dot_product_attention
# in bf16 as torch.export writes it (bench/attention.py's cases: head dims 64 and 128, sequences
# 256 to 4096, causal and not), compiled by fxc for CUDA (one cuDNN fused-attention call) and
# timed with `fxc --bench --json`, against PyTorch's own sdpa (its default backend, cuDNN's and
# FlashAttention's) timed with triton's do_bench in the same call. The two small cases are also
# run with --expect against PyTorch's CUDA output (rtol/atol 2e-2, bf16).
#
#   run(command="bash bench/attention.sh", carry=["carry"], timeout_s=600)
#
# Writes to $OUT: attention.md (the table), attention.log, and every JSON.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkg=${PKG:-$root/carry/fxc-gpu-fxc.tar.xz}
out=${OUT:-$root/gpu-logs}
py=/opt/torch/.venv/bin/python3
[ -x "$py" ] || py=python3
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
exec > >(tee "$out/attention.log") 2>&1
. "$root/bench/lib_gpu.sh"
export FXC_CACHE_DIR=$work/fxc-cache
res=$work/res
mkdir -p "$res"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
ls "$cudnn" 2>/dev/null | grep -m1 'libcudnn.so.9\.' || true
"$py" "$root/bench/attention.py" export "$res" || exit 1
while read -r n kind; do
  if [ "$kind" = checked ]; then
    timeout 120 "$fxc" --device=cuda --run --inputs "$res/$n.io.safetensors" \
      --expect "$res/$n.io.safetensors" --rtol 2e-2 --atol 2e-2 --log=inductor "$res/$n.pt2" \
      >"$res/$n.check.out" 2>"$res/$n.check.err"
    echo "$n check: exit $? $(grep -m3 -E 'error|mismatch|attention|extern calls' "$res/$n.check.err" | cut -c1-220 | tr '\n' ' ')"
  fi
  timeout 120 "$fxc" --device=cuda --bench --json "$res/$n.pt2" >"$res/$n.fxc.json" 2>"$res/$n.fxc.err"
  echo "$n bench: exit $? $(grep -o '"median_ms": [0-9.e-]*' "$res/$n.fxc.json" | head -1) $(grep -m2 -i error "$res/$n.fxc.err" | cut -c1-300)"
  # The same graph decomposed (two matmuls around a softmax), for comparison.
  timeout 120 "$fxc" --device=cuda --attention=decomposed --bench --json "$res/$n.pt2" \
    >"$res/$n.fxc_decomposed.json" 2>"$res/$n.fxc_decomposed.err"
  echo "$n decomposed: exit $? $(grep -o '"median_ms": [0-9.e-]*' "$res/$n.fxc_decomposed.json" | head -1) $(grep -m1 -i error "$res/$n.fxc_decomposed.err" | cut -c1-200)"
done < <("$py" "$root/bench/attention.py" names x)
timeout 300 "$py" "$root/bench/attention.py" torch "$res"
"$py" "$root/bench/attention.py" table "$res" | tee "$out/attention.md"
cp "$res"/*.json "$res"/*.err "$out/" 2>/dev/null
exit 0
