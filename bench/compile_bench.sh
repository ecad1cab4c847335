#!/usr/bin/env bash
# Compile-time benchmark (issue 9, DESIGN.md §6): cold compiles of a ResNet-50-sized graph
# (bench/models/resnet50.fxg: 53 conv + batch_norm layers in bottleneck blocks, stages
# [3, 4, 6, 3]; regenerate with bench/make_models.py) for CUDA (--emit=ptx: cross-compilation,
# no GPU needed) and for the CPU (--emit=llvm: the full JIT compile, weights included), each the
# median wall time of N fresh fxc processes; then one --time-passes report per target.
# Usage: bench/compile_bench.sh <fxc> [N (default 5)] [graph.fxg]
set -euo pipefail
fxc=$1
n=${2:-5}
src=$(cd "$(dirname "$0")/.." && pwd)
graph=${3:-$src/bench/models/resnet50.fxg}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -f "$graph" ] || python3 "$src/bench/make_models.py" --only resnet50 -o "$(dirname "$graph")" >/dev/null
nodes=$(python3 -c "import json,sys; g=json.load(open(sys.argv[1])); print(len(g['inputs']), len(g['nodes']))" "$graph")
echo "graph: $(basename "$graph") (${nodes% *} inputs, ${nodes#* } op nodes); fxc: $("$fxc" --version)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
time_ms() { # time_ms <command...>: wall milliseconds of one run
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null 2>"$tmp/err" || { echo "error: $* failed:" >&2; cat "$tmp/err" >&2; exit 1; }
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000))
}

echo
echo "| target | command | median of $n (ms) | min (ms) | max (ms) |"
echo "|---|---|---:|---:|---:|"
for target in cuda cpu; do
  if [ $target = cuda ]; then args=(--device=cuda --emit=ptx -o "$tmp/out.ptx"); else
    args=(--device=cpu --emit=llvm -o "$tmp/out.ll"); fi
  for _ in $(seq "$n"); do time_ms "$fxc" "${args[@]}" "$graph"; done >"$tmp/$target.ms"
  echo "| $target | fxc ${args[*]:0:2} | $(median <"$tmp/$target.ms") | $(sort -n "$tmp/$target.ms" | head -1) | $(sort -n "$tmp/$target.ms" | tail -1) |"
done
for target in cuda cpu; do
  if [ $target = cuda ]; then args=(--device=cuda --emit=ptx -o "$tmp/out.ptx"); else
    args=(--device=cpu --emit=llvm -o "$tmp/out.ll"); fi
  echo
  echo "--time-passes, --device=$target:"
  "$fxc" "${args[@]}" --time-passes "$graph" 2>&1 >/dev/null | sed 's/^/    /'
done
