#!/usr/bin/env bash
# CPU benchmark: compiled inductor vs the eager interpreter on every fixture and on
# examples/mlp.fxg, with fxc --bench (warm-up, cache flush before each run, median over a
# time budget). Prints a Markdown table. Usage: bench/cpu_bench.sh <fxc> [graphs...]
set -euo pipefail
fxc=$1; shift
src=$(cd "$(dirname "$0")/.." && pwd)
graphs=("$@")
if [ ${#graphs[@]} -eq 0 ]; then
  graphs=("$src"/test/fixtures/*.pt2 "$src/examples/mlp.fxg")
fi
median() { sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'; }
echo "| graph | eager (ms) | inductor (ms) | speed-up |"
echo "|---|---:|---:|---:|"
for g in "${graphs[@]}"; do
  e=$("$fxc" --bench --device=cpu --backend=eager "$g" | median)
  i=$("$fxc" --bench --device=cpu --backend=inductor "$g" | median)
  r=$(awk -v e="$e" -v i="$i" 'BEGIN { printf "%.1fx", e / i }')
  echo "| $(basename "$g") | $e | $i | $r |"
done
