#!/usr/bin/env bash
# Compile-time benchmark (issue 9, docs/design.md §6): cold compiles of a ResNet-50-sized graph
# (bench/models/resnet50.fxg: 53 conv + batch_norm layers in bottleneck blocks, stages
# [3, 4, 6, 3]; regenerate with bench/make_models.py) for CUDA (--emit=ptx: cross-compilation,
# no GPU needed) and for the CPU (--emit=llvm: the full JIT compile, weights included), each the
# median wall time (and CPU time: user + system) of N fresh fxc processes; then one
# --time-passes report per target; then the default action (an .fxo) through the compile cache:
# one cold compile, N hits over the output, N hits into a new output file.
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
time_ms() { # time_ms <command...>: "wall_ms cpu_ms" of one run (cpu: user + system, all threads)
  local TIMEFORMAT='%R %U %S' t
  t=$({ time "$@" >/dev/null 2>"$tmp/err"; } 2>&1) || { echo "error: $* failed:" >&2; cat "$tmp/err" >&2; exit 1; }
  echo "$t" | awk '{ printf "%d %d\n", $1 * 1000, ($2 + $3) * 1000 }'
}

echo
echo "| target | command | wall, median of $n (ms) | min | max | CPU time, median (ms) |"
echo "|---|---|---:|---:|---:|---:|"
for target in cuda cpu; do
  if [ $target = cuda ]; then args=(--device=cuda --emit=ptx -o "$tmp/out.ptx"); else
    args=(--device=cpu --emit=llvm -o "$tmp/out.ll"); fi
  for _ in $(seq "$n"); do time_ms "$fxc" "${args[@]}" "$graph"; done >"$tmp/$target.ms"
  w=$(cut -d' ' -f1 "$tmp/$target.ms")
  echo "| $target | fxc ${args[*]:0:2} | $(echo "$w" | median) | $(echo "$w" | sort -n | head -1) |" \
    "$(echo "$w" | sort -n | tail -1) | $(cut -d' ' -f2 "$tmp/$target.ms" | median) |"
done
# The compile cache (the default action, compiling to an .fxo, goes through it): one cold
# compile fills an empty cache, then N hits.
for target in cuda cpu; do
  args=(--device=$target -o "$tmp/out.fxo" --cache-dir="$tmp/cache-$target")
  status=0
  cold=$(time_ms "$fxc" "${args[@]}" "$graph") || status=$?
  if [ $status -ne 0 ] || [ ! -s "$tmp/out.fxo" ]; then
    echo "| $target .fxo, compile cache | fxc --device=$target --cache-dir | not measured: $(head -1 "$tmp/err") | | | |"
    continue
  fi
  echo "| $target .fxo, cold (fills the cache) | fxc --device=$target -o m.fxo --cache-dir | ${cold% *} | | | ${cold#* } |"
  for _ in $(seq "$n"); do time_ms "$fxc" "${args[@]}" "$graph"; done >"$tmp/$target.hit"
  w=$(cut -d' ' -f1 "$tmp/$target.hit")
  echo "| $target .fxo, cache hit | fxc --device=$target -o m.fxo --cache-dir | $(echo "$w" | median) |" \
    "$(echo "$w" | sort -n | head -1) | $(echo "$w" | sort -n | tail -1) | $(cut -d' ' -f2 "$tmp/$target.hit" | median) |"
  # The rows above overwrite the output of the run before (a rebuild); these write a new file.
  for _ in $(seq "$n"); do
    rm -f "$tmp/new.fxo"
    time_ms "$fxc" --device=$target -o "$tmp/new.fxo" --cache-dir="$tmp/cache-$target" "$graph"
  done >"$tmp/$target.new"
  cmp -s "$tmp/out.fxo" "$tmp/new.fxo" || { echo "error: a hit wrote other bytes" >&2; exit 1; }
  w=$(cut -d' ' -f1 "$tmp/$target.new")
  echo "| $target .fxo, cache hit, new output file | fxc --device=$target -o new.fxo --cache-dir | $(echo "$w" | median) |" \
    "$(echo "$w" | sort -n | head -1) | $(echo "$w" | sort -n | tail -1) | $(cut -d' ' -f2 "$tmp/$target.new" | median) |"
done
for target in cuda cpu; do
  if [ $target = cuda ]; then args=(--device=cuda --emit=ptx -o "$tmp/out.ptx"); else
    args=(--device=cpu --emit=llvm -o "$tmp/out.ll"); fi
  echo
  echo "--time-passes, --device=$target:"
  "$fxc" "${args[@]}" --time-passes "$graph" 2>&1 >/dev/null | sed 's/^/    /'
done
