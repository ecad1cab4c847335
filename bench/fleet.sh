#!/usr/bin/env bash
# A fleet sharing compiles through the remote cache (--remote-cache, issue 24): N simulated hosts
# (each its own empty local cache directory, one Redis on localhost) compile the same M graphs
# (the fixtures' .pt2 archives and the examples' .fxg graphs), host after host, first with local
# caches only (every host compiles everything), then with the remote cache (the first host
# compiles and publishes, the others fetch). Prints the fleet-wide compile time of each, the
# median compile of a host that compiles and of one that fetches, and the remote hits.
# Usage: bench/fleet.sh <fxc> [N hosts (default 4)]
set -euo pipefail
fxc=$1
n=${2:-4}
src=$(cd "$(dirname "$0")/.." && pwd)
fixtures=${FIXTURES:-$src/../shared/fixtures}
[ -d "$fixtures" ] || fixtures=$src/test/fixtures
tmp=$(mktemp -d)
rpid=
trap '[ -n "$rpid" ] && kill "$rpid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
command -v redis-server >/dev/null || { echo "error: redis-server is needed (tools/install-deps.sh)" >&2; exit 1; }

graphs=()
for g in "$fixtures"/*.pt2 "$src"/examples/*.fxg; do
  case $g in *.core.pt2) continue ;; esac # the same models as their .pt2, decomposed
  graphs+=("$g")
done
m=${#graphs[@]}

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$tmp/redis"
redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp/redis" --save '' --appendonly no \
  --daemonize no >"$tmp/redis/log" 2>&1 &
rpid=$!
for _ in $(seq 100); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done

echo "fleet: $n hosts x $m graphs ($(cd "$fixtures" && pwd), examples/*.fxg); fxc: $("$fxc" --version | head -1)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(redis-server --version | cut -d' ' -f1-3)"

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
now_ms() { date +%s%N | awk '{ printf "%.1f\n", $1 / 1e6 }'; }

# fleet <mode> [flags...]: every host compiles every graph; one line per compile into
# $tmp/<mode>.times: "<host> <ms>"; remote hits counted from --log=cache.
fleet() {
  local mode=$1; shift
  : >"$tmp/$mode.times"
  local hits=0
  for h in $(seq "$n"); do
    for g in "${graphs[@]}"; do
      local t0 t1
      t0=$(now_ms)
      "$fxc" --device=cpu --backend=inductor --cache-dir="$tmp/$mode/host$h" "$@" --log=cache \
        -o "$tmp/out.fxo" "$g" >/dev/null 2>"$tmp/err" || { echo "error: $g on host $h:" >&2; cat "$tmp/err" >&2; exit 1; }
      t1=$(now_ms)
      grep -q "remote hit" "$tmp/err" && hits=$((hits + 1))
      echo "$h $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" >>"$tmp/$mode.times"
    done
  done
  echo "$hits" >"$tmp/$mode.hits"
}

fleet local
fleet remote --remote-cache="redis://127.0.0.1:$port"

total() { awk '{ s += $2 } END { printf "%.2f", s / 1000 }' "$1"; }
med() { awk -v w="$2" '($1 == 1) == (w == "first")' "$1" | cut -d' ' -f2 | median; }
echo
echo "| fleet of $n hosts, $m graphs | fleet-wide compile time (s) | median compile, host 1 (ms) | median compile, hosts 2..$n (ms) | remote hits |"
echo "|---|---:|---:|---:|---:|"
echo "| local caches only | $(total "$tmp/local.times") | $(med "$tmp/local.times" first) | $(med "$tmp/local.times" rest) | 0 |"
echo "| --remote-cache (one Redis) | $(total "$tmp/remote.times") | $(med "$tmp/remote.times" first) | $(med "$tmp/remote.times" rest) | $(cat "$tmp/remote.hits") of $(( (n - 1) * m )) |"
echo "redis: $(redis-cli -p "$port" dbsize) keys, $(redis-cli -p "$port" info memory | grep '^used_memory_human' | cut -d: -f2 | tr -d '\r') used"
