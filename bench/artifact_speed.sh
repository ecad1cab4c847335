#!/usr/bin/env bash
# Artifact build speed (issue 22): cold compiles to an .fxo (--no-cache) of a ResNet-50 for CUDA
# and for the CPU in train mode, a BERT-base (12 layers, hidden 768, seq 128, 436 MB of weights)
# for CUDA, the --emit=ptx compile of each CUDA graph for comparison, and a compile-cache hit of
# the BERT-base artifact. Each row: the median wall time and the median peak RSS of N fresh fxc
# processes (/usr/bin/time -v), with their CPU time (all threads), for each fxc given (before and after a change, in the same run).
# The graphs are generated, not stored in git: bench/make_models.py (resnet50.fxg, weights by
# init rule) and bench/make_bert.py (bert.fxg + bert.safetensors), into $FXC_BENCH_DIR (default
# /tmp/fxc-artifact-bench, kept between runs).
# With ZOO=<dir> (the zoo archives restored by tools/zoo_weights.py) also the torch.export
# archives resnet50.pt2 (CUDA; CPU train) and bert_base.pt2 (CUDA; cache hits).
# Usage: bench/artifact_speed.sh [-n N (default 5)] FXC [FXC...]
set -euo pipefail
n=5
if [ "${1:-}" = -n ]; then n=$2; shift 2; fi
[ $# -ge 1 ] || { echo "usage: $0 [-n N] FXC [FXC...]" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${FXC_BENCH_DIR:-/tmp/fxc-artifact-bench}
mkdir -p "$dir"
py=/usr/bin/python3
[ -f "$dir/resnet50.fxg" ] || $py "$src/bench/make_models.py" --only resnet50 -o "$dir" >/dev/null
[ -f "$dir/bert.safetensors" ] || $py "$src/bench/make_bert.py" "$dir/bert" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# measure <label> <fxc> <args...>: one table row, N runs of `fxc args`.
measure() {
  local label=$1 fxc=$2
  shift 2
  : >"$tmp/wall"
  : >"$tmp/cpu"
  : >"$tmp/rss"
  for _ in $(seq "$n"); do
    /usr/bin/time -v -o "$tmp/time" "$fxc" "$@" >/dev/null 2>"$tmp/err" ||
      { echo "error: $fxc $* failed:" >&2; cat "$tmp/err" >&2; exit 1; }
    awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; printf "%d\n", s * 1000 }' "$tmp/time" >>"$tmp/wall"
    awk -F': ' '/Maximum resident set size/ { printf "%d\n", $2 / 1024 }' "$tmp/time" >>"$tmp/rss"
    awk -F': ' '/(User|System) time/ { s += $2 } END { printf "%d\n", s * 1000 }' "$tmp/time" >>"$tmp/cpu"
  done
  echo "| $label | $fxc | $(median <"$tmp/wall") |" \
    "$(sort -n "$tmp/wall" | head -1) | $(median <"$tmp/cpu") | $(median <"$tmp/rss") |"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); N = $n"
echo
echo "| case | fxc | wall, median (ms) | min (ms) | CPU (user + sys), median (ms) | peak RSS, median (MB) |"
echo "|---|---|---:|---:|---:|---:|"
for fxc in "$@"; do
  measure "ResNet-50, CUDA, --emit=ptx" "$fxc" --device=cuda --no-cache --emit=ptx -o "$tmp/r.ptx" "$dir/resnet50.fxg"
  measure "ResNet-50, CUDA, .fxo" "$fxc" --device=cuda --no-cache -o "$tmp/r.fxo" "$dir/resnet50.fxg"
  measure "BERT-base, CUDA, --emit=ptx" "$fxc" --device=cuda --no-cache --emit=ptx -o "$tmp/b.ptx" "$dir/bert.fxg"
  measure "BERT-base, CUDA, .fxo" "$fxc" --device=cuda --no-cache -o "$tmp/b.fxo" "$dir/bert.fxg"
  measure "ResNet-50 train, CPU, .fxo" "$fxc" --device=cpu --mode=train --no-cache -o "$tmp/t.fxo" "$dir/resnet50.fxg"
  rm -rf "$tmp/cache"
  "$fxc" --device=cuda --cache-dir="$tmp/cache" -o "$tmp/c.fxo" "$dir/bert.fxg" # the store
  measure "BERT-base, CUDA, cache hit" "$fxc" --device=cuda --cache-dir="$tmp/cache" -o "$tmp/c.fxo" "$dir/bert.fxg"
  # The torch.export archives of the zoo (tools/zoo_weights.py restore), where $ZOO names them.
  if [ -n "${ZOO:-}" ] && [ -f "$ZOO/resnet50.pt2" ] && [ -f "$ZOO/bert_base.pt2" ]; then
    measure "resnet50.pt2, CUDA, .fxo" "$fxc" --device=cuda --no-cache -o "$tmp/zr.fxo" "$ZOO/resnet50.pt2"
    measure "resnet50.pt2 train, CPU, .fxo" "$fxc" --device=cpu --mode=train --no-cache -o "$tmp/zt.fxo" "$ZOO/resnet50.pt2"
    measure "bert_base.pt2, CUDA, .fxo" "$fxc" --device=cuda --no-cache -o "$tmp/zb.fxo" "$ZOO/bert_base.pt2"
    rm -rf "$tmp/cache"
    "$fxc" --device=cuda --cache-dir="$tmp/cache" -o "$tmp/zc.fxo" "$ZOO/bert_base.pt2" # the store
    measure "bert_base.pt2, CUDA, cache hit" "$fxc" --device=cuda --cache-dir="$tmp/cache" -o "$tmp/zc.fxo" "$ZOO/bert_base.pt2"
    measure "bert_base.pt2, CUDA, cache hit, new output" "$fxc" --device=cuda --cache-dir="$tmp/cache" -o "$tmp/zc2.fxo" "$ZOO/bert_base.pt2"
  fi
done
