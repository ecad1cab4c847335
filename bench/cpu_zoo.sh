#!/usr/bin/env bash
# CPU zoo benchmark: fxc's inductor against PyTorch eager (cpu_anchor.py: Debian's torch, op by
# op) on every archive of a folder, back to back in one run, with the same thread count each.
# An archive NAME.pt2 or NAME.core.pt2 is measured when NAME.io.safetensors lies beside it
# (inputs input_i, reference outputs output_i; both sides run those inputs and check them).
# Prints the date, machine and load, then a Markdown table of medians (ms) and ratios.
#
# Usage: bench/cpu_zoo.sh <fxc> [zoo dir (default /work/zoo)]
#   THREADS=2          threads for both sides (fxc --threads, torch.set_num_threads)
#   SECONDS_EACH=2     timed budget of the anchor (fxc --bench: 1 s, at least 5 runs)
#   NO_ONEDNN=1        also time fxc with FXC_ONEDNN=0 (im2col + BLAS, reference kernels)
#   ANCHOR=path        cpu_anchor.py (default ../shared/anchors/cpu_anchor.py beside the checkout)
#   MODELS="a b"       only these NAMEs (default: every archive with its .io.safetensors)
#   MODE=train         time fxc's train step (forward + backward, --mode=train) instead: no
#                      PyTorch column (the anchor runs inference only), the compile's peak RSS
#                      (/usr/bin/time)
#   BASE=<another fxc> also time that build in the same run, each model right after this one
#                      (a before/after pair; inference and train)
# NAME.core.pt2 (the decomposed export) is taken over NAME.pt2 when both are there.
set -euo pipefail
fxc=$(realpath "$1")
zoo=${2:-/work/zoo}
src=$(cd "$(dirname "$0")/.." && pwd)
threads=${THREADS:-2}
anchor=${ANCHOR:-$src/../shared/anchors/cpu_anchor.py}
[ -f "$anchor" ] || anchor=/work/shared/anchors/cpu_anchor.py
py=/usr/bin/python3
field() { # the field of the JSON object that ends stdin (one line, or pretty-printed)
  $py -c 'import json,sys
t=sys.stdin.read().strip().splitlines()
d={}
for i in range(len(t) - 1, -1, -1):
    if t[i].startswith("{"):
        try: d=json.loads("\n".join(t[i:])); break
        except ValueError: pass
v=d.get(sys.argv[1])
print("-" if v is None else (f"{v:.2f}" if isinstance(v,float) else v))' "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-";
  else if (a >= b) printf "%.2fx faster", a / b; else printf "%.2fx slower", b / a }'; }
fxc_ms() { # fxc model io [env...]: that fxc's median, "-" when it fails
  local bin=$1 m=$2 io=$3; shift 3
  env "$@" "$bin" "$m" --device=cpu --backend=inductor --threads="$threads" --inputs "$io" \
    --expect "$io" --rtol 1e-3 --atol 1e-4 --bench --json 2>/dev/null | field median_ms || echo -
}
base=${BASE:+$(realpath "$BASE")}
if [ "${MODE:-inference}" = train ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  train_ms() { # fxc model io: compile (peak RSS in $tmp/rss), then the .fxo's median step
    local f=$1 m=$2 io=$3
    if ! /usr/bin/time -f %M -o "$tmp/rss" "$f" "$m" --device=cpu --backend=inductor \
      --mode=train --threads="$threads" --no-cache -o "$tmp/m.fxo" >/dev/null 2>&1; then
      echo - >"$tmp/rss"
      echo -
      return
    fi
    "$f" "$tmp/m.fxo" --threads="$threads" --inputs "$io" --bench --json 2>/dev/null |
      field median_ms || echo -
  }
  mb() { awk '{ if ($1 ~ /^[0-9]+$/) printf "%d", $1 / 1024; else print "-" }' "$tmp/rss"; }
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores; threads: $threads; train step (forward + backward)"
  echo "load before: $(uptime | sed 's/.*load average/load average/')"
  echo
  if [ -n "$base" ]; then
    echo "| model | base fxc ms | base compile RSS MB | fxc ms | compile RSS MB | fxc vs base |"
    echo "|---|---:|---:|---:|---:|---|"
  else
    echo "| model | fxc ms | compile RSS MB |"
    echo "|---|---:|---:|"
  fi
  shopt -s nullglob
  for m in "$zoo"/*.pt2; do
    name=$(basename "$m" .pt2)
    name=${name%.core}
    io=$zoo/$name.io.safetensors
    [ -f "$io" ] || continue
    [ "$m" = "$zoo/$name.pt2" ] && [ -f "$zoo/$name.core.pt2" ] && continue
    if [ -n "${MODELS:-}" ] && [[ " $MODELS " != *" $name "* ]]; then continue; fi
    if [ -n "$base" ]; then
      b=$(train_ms "$base" "$m" "$io")
      brss=$(mb)
      f=$(train_ms "$fxc" "$m" "$io")
      echo "| $name | $b | $brss | $f | $(mb) | $(ratio "$b" "$f") |"
    else
      f=$(train_ms "$fxc" "$m" "$io")
      echo "| $name | $f | $(mb) |"
    fi
  done
  echo
  echo "load after: $(uptime | sed 's/.*load average/load average/')"
  exit 0
fi
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); threads: $threads each"
echo "load before: $(uptime | sed 's/.*load average/load average/')"
echo
hdr="| model | PyTorch eager ms | fxc inductor ms | fxc vs PyTorch |"
sep="|---|---:|---:|---|"
if [ -n "${NO_ONEDNN:-}" ]; then
  hdr="$hdr fxc, FXC_ONEDNN=0 ms | oneDNN speed-up |"
  sep="$sep---:|---|"
fi
if [ -n "$base" ]; then
  hdr="$hdr base fxc ms | fxc vs base |"
  sep="$sep---:|---|"
fi
echo "$hdr"
echo "$sep"
shopt -s nullglob
for m in "$zoo"/*.pt2; do
  name=$(basename "$m" .pt2)
  name=${name%.core}
  io=$zoo/$name.io.safetensors
  [ -f "$io" ] || continue
  [ "$m" = "$zoo/$name.pt2" ] && [ -f "$zoo/$name.core.pt2" ] && continue
  if [ -n "${MODELS:-}" ] && [[ " $MODELS " != *" $name "* ]]; then continue; fi
  a=$($py "$anchor" "$m" "$io" --threads "$threads" --seconds "${SECONDS_EACH:-2}" 2>/dev/null |
    field median_ms || echo -)
  f=$(fxc_ms "$fxc" "$m" "$io")
  row="| $name | $a | $f | $(ratio "$a" "$f") |"
  if [ -n "${NO_ONEDNN:-}" ]; then
    o=$(fxc_ms "$fxc" "$m" "$io" FXC_ONEDNN=0)
    row="$row $o | $(ratio "$o" "$f") |"
  fi
  if [ -n "$base" ]; then
    b=$(fxc_ms "$base" "$m" "$io")
    row="$row $b | $(ratio "$b" "$f") |"
  fi
  echo "$row"
done
echo
echo "load after: $(uptime | sed 's/.*load average/load average/')"
