#!/usr/bin/env bash
# The anchor, in the same device call as fxc: PyTorch eager and torch.compile timed by
# ../shared/anchors/torch_compare.py (do_bench, CUDA events) next to fxc --bench --device=cuda on
# the same graphs and inputs. Writes anchor.json and fxc_bench.txt to $OUT. Never fails the run
# for speed: it reports. Usage: anchor.sh <fxc>
set -u
fxc=$1
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=${OUT:-$root/gpu-logs}
fx=$root/test/fixtures
anchor=$root/bench/anchors/torch_compare.py  # a copy of ../shared/anchors (the GPU machine has no shared/)

py=/opt/torch/.venv/bin/python3; [ -x "$py" ] || py=python3
graphs=(mlp block convnet norms embed berttiny)
args=(); ins=()
for g in "${graphs[@]}"; do args+=("$fx/$g.pt2"); ins+=(--inputs "$fx/$g.io.safetensors"); done
if [ -f "$anchor" ]; then
  timeout 400 "$py" "$anchor" "${args[@]}" "${ins[@]}" --json "$out/anchor.json" || echo "anchor failed"
else echo "anchor script not found"; fi
for g in "${graphs[@]}"; do
  "$fxc" --device=cuda --bench --inputs "$fx/$g.io.safetensors" "$fx/$g.pt2" 2>&1 | grep -m1 -e "median" -e "error"
done | tee "$out/fxc_bench.txt"
exit 0
