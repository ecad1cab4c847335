#!/usr/bin/env bash
# The remote compile cache on Redis (--remote-cache): Debian's redis-server on a free localhost
# port in a temporary directory, two local cache directories standing for two machines. The
# second machine's compile is a remote hit with the same bytes and fills its local cache; large
# weights are stored once; 16 parallel compiles from both publish one entry; --max-autotune
# choices are shared; a corrupted and a truncated value are discarded with a warning and never
# used; a wrong password, a server that is down, stopped (slow), full or killed in the middle of
# a run cost one warning and never the compile; --remote-cache-ttl, the size limit, the key
# prefix; --explain-cache names the flag that changed; the password never reaches a log line.
# Usage: remote_cache.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
tmp=$(mktemp -d)
rpid=
stop_redis() {
  if [ -n "$rpid" ]; then kill -CONT "$rpid" 2>/dev/null; kill "$rpid" 2>/dev/null; wait "$rpid" 2>/dev/null; fi
  rpid=
}
trap 'stop_redis; rm -rf "$tmp"' EXIT
unset FXC_CACHE_DIR FXC_CACHE_MAX_SIZE FXC_LOGS FXC_LOGS_OUT FXC_COMPILE_DEBUG FXC_REMOTE_CACHE \
  FXC_REMOTE_CACHE_PASSWORD FXC_REMOTE_CACHE_PASSWORD_FILE FXC_REMOTE_CACHE_PREFIX \
  FXC_REMOTE_CACHE_TIMEOUT FXC_REMOTE_CACHE_MAX_VALUE
export HOME=$tmp/home XDG_CACHE_HOME=
fail=0
. "$src/test/lib/common.sh"

# Not installed is a failure, not a skip: tools/install-deps.sh installs redis-server.
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo "FAIL redis-server and redis-cli are needed (tools/install-deps.sh installs them)"
  exit 1
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$tmp/redis"
start_redis() { # start_redis [redis-server options...]
  redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp/redis" --save '' --appendonly no \
    --daemonize no "$@" >"$tmp/redis/log" 2>&1 &
  rpid=$!
  for _ in $(seq 100); do
    redis-cli -p "$port" ${pw:+-a "$pw" --no-auth-warning} ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.05
  done
  echo "FAIL redis-server did not start"; cat "$tmp/redis/log"; exit 1
}
rc() { redis-cli -p "$port" ${pw:+-a "$pw" --no-auth-warning} "$@"; }
nkeys() { rc --scan --pattern "$1" | wc -l; }
warnings() { grep -c "warning" "$1"; }
pw=
start_redis
url=redis://127.0.0.1:$port
args=(--device=cpu --backend=inductor)
g=$fx/mlp.pt2

check "reference compile (no cache)" 0 "$fxc" "${args[@]}" --no-cache -o "$tmp/ref.fxo" "$g"

# Machine A: a local and a remote miss, then a local store and a publication.
check "machine A compiles" 0 "$fxc" "${args[@]}" --cache-dir="$tmp/a" --remote-cache="$url" \
  --log=cache -o "$tmp/a.fxo" "$g"
has "A misses locally" "$tmp/err" "local miss"
has "A misses remotely" "$tmp/err" "remote miss"
has "A publishes" "$tmp/err" "remote put"
has "the summary counts puts and bytes" "$tmp/err" "1 put, 0 bytes read,"
has "latency is reported" "$tmp/err" " ms)"
[ "$(nkeys 'fxc:m:*')" -eq 1 ] && ok "one manifest" || bad "manifests: $(nkeys 'fxc:m:*')"
same "A's artifact is the reference" "$tmp/ref.fxo" "$tmp/a.fxo"

# Machine B: a remote hit, the same bytes, and its local cache filled.
check "machine B compiles" 0 "$fxc" "${args[@]}" --cache-dir="$tmp/b" --remote-cache="$url" \
  --log=cache -o "$tmp/b.fxo" "$g"
has "B hits remotely" "$tmp/err" "remote hit"
has "B's summary counts the hit and its bytes" "$tmp/err" ": 1 hit, 0 misses, 0 puts,"
hasnt "B compiles nothing to publish" "$tmp/err" "remote put"
same "a remote hit is byte-identical" "$tmp/ref.fxo" "$tmp/b.fxo"
[ "$(find "$tmp/b" -name '*.entry' | wc -l)" -eq 1 ] && ok "the remote hit filled B's local cache" \
  || bad "B's local entries: $(find "$tmp/b" -name '*.entry' | wc -l)"
check "B again" 0 "$fxc" "${args[@]}" --cache-dir="$tmp/b" --remote-cache="$url" --log=cache \
  -o "$tmp/b2.fxo" "$g"
has "B's second compile hits locally" "$tmp/err" "local hit"
hasnt "a local hit asks the server nothing" "$tmp/err" "remote "
check "B runs from the remote entry" 0 "$fxc" "${args[@]}" --cache-dir="$tmp/b3" \
  --remote-cache="$url" --log=cache --run "$g" --inputs "$fx/mlp.io.safetensors"
has "--run hits remotely" "$tmp/err" "remote hit"

# Large weights are stored once by digest: another entry of the same graph adds one blob
# (its artifact), not another copy of the weights.
blobs=$(nkeys 'fxc:b:*')
large=0
for k in $(rc --scan --pattern 'fxc:b:*'); do [ "$(rc strlen "$k")" -ge 65536 ] && large=$((large + 1)); done
[ "$large" -ge 1 ] && [ "$blobs" -ge 2 ] && ok "the weights are blobs of their own ($large large of $blobs)" \
  || bad "blobs: $blobs, large: $large"
check "A compiles for training" 0 "$fxc" "${args[@]}" --mode=train --cache-dir="$tmp/a" \
  --remote-cache="$url" -o "$tmp/v.fxo" "$g"
[ "$(nkeys 'fxc:m:*')" -eq 2 ] && ok "a second manifest" || bad "manifests: $(nkeys 'fxc:m:*')"
[ "$(nkeys 'fxc:b:*')" -eq $((blobs + 1)) ] && ok "the second entry (another artifact) shares the weights" \
  || bad "blobs: $(nkeys 'fxc:b:*'), want $((blobs + 1))"
check "B fetches the training artifact" 0 "$fxc" "${args[@]}" --mode=train --cache-dir="$tmp/b" \
  --remote-cache="$url" --log=cache -o "$tmp/bv.fxo" "$g"
has "B's training compile is a remote hit" "$tmp/err" "remote hit"
same "the artifact put together from shared weights is byte-identical" "$tmp/v.fxo" "$tmp/bv.fxo"
rm -f "$tmp"/b/*/*.entry "$tmp"/b/*/*.manifest "$tmp/b/stats"
check "B again, with an empty local cache" 0 "$fxc" "${args[@]}" --cache-dir="$tmp/b" \
  --remote-cache="$url" -o "$tmp/b.fxo" "$g"

# TTL: the default (7 days) and --remote-cache-ttl.
ttl=$(rc ttl "$(rc --scan --pattern 'fxc:m:*' | head -1)")
[ "$ttl" -gt 600000 ] && [ "$ttl" -le 604800 ] && ok "entries expire after 7 days by default" || bad "ttl $ttl"
check "--remote-cache-ttl=100" 0 "$fxc" "${args[@]}" --cache-dir="$tmp/t" --remote-cache="$url" \
  --remote-cache-ttl=100 -o "$tmp/t.fxo" "$fx/norms.pt2"
ttls=$(for k in $(rc --scan --pattern 'fxc:*'); do rc ttl "$k"; done | sort -n | uniq)
bad_ttl=$(for k in $(rc --scan --pattern 'fxc:m:*'); do rc ttl "$k"; done | awk '$1 > 0 && $1 <= 100' | wc -l)
[ "$bad_ttl" -eq 1 ] && ok "--remote-cache-ttl sets the expiry" || bad "ttls: $ttls"
check "--remote-cache-ttl=-1 is a usage error" 2 "$fxc" "${args[@]}" --remote-cache="$url" \
  --remote-cache-ttl=-1 "$g"

# --explain-cache: every component with its digest; after changing one flag, that flag.
check "--explain-cache (hit)" 0 "$fxc" "${args[@]}" --cache-dir="$tmp/b" --remote-cache="$url" \
  --explain-cache "$g"
for c in "cache key " "fxc version" "fxc build" "target" "--backend" "--verify-each" "graph" "--max-autotune"; do
  has "explain lists $c" "$tmp/out" "$c"
done
has "explain: local hit" "$tmp/out" "local $tmp/b: hit"
has "explain: remote hit" "$tmp/out" "remote $url: hit"
check "--explain-cache --verify-each" 0 "$fxc" "${args[@]}" --verify-each --cache-dir="$tmp/b" \
  --remote-cache="$url" --explain-cache "$g"
has "local: the flag that changed" "$tmp/out" "local $tmp/b: miss: --verify-each differs; all else equal"
has "remote: the flag that changed" "$tmp/out" "remote $url: miss: --verify-each differs; all else equal"
[ ! -e "$tmp/b/mlp.fxo" ] && [ "$(find "$tmp/b" -name '*.entry' | wc -l)" -eq 1 ] \
  && ok "--explain-cache compiles nothing" || bad "--explain-cache stored something"
check "--explain-cache of another graph" 0 "$fxc" "${args[@]}" --cache-dir="$tmp/b" \
  --remote-cache="$url" --explain-cache "$fx/convnet.pt2"
has "another graph: the graph and its name differ" "$tmp/out" "miss: graph"

# An external weights file that changed is named by its file.
mkdir -p "$tmp/wf"; cp "$src/examples/block.fxg" "$src/examples/block.safetensors" "$tmp/wf/"
check "compile block.fxg" 0 env FXC_REMOTE_CACHE_PREFIX=wf "$fxc" "${args[@]}" --cache-dir="$tmp/wfc" --remote-cache="$url" \
  -o "$tmp/wf.fxo" "$tmp/wf/block.fxg"
python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[-1] ^= 1; open(p, "wb").write(b)' \
  "$tmp/wf/block.safetensors"
check "--explain-cache after a weight changed" 0 env FXC_REMOTE_CACHE_PREFIX=wf "$fxc" "${args[@]}" --cache-dir="$tmp/wfc" \
  --remote-cache="$url" --explain-cache "$tmp/wf/block.fxg"
has "explain lists the weights file" "$tmp/out" "weights block.safetensors"
has "local: the weights file that changed" "$tmp/out" "local $tmp/wfc: miss: weights block.safetensors differs; all else equal"
has "remote: the weights file that changed" "$tmp/out" "remote $url: miss: weights block.safetensors differs; all else equal"

# 16 parallel compiles of two graphs from both machines, into a fresh namespace: all succeed,
# all write the reference bytes, one entry per graph is published.
check "reference convnet" 0 "$fxc" "${args[@]}" --no-cache -o "$tmp/refc.fxo" "$fx/convnet.pt2"
pids=()
for i in $(seq 16); do
  host=$([ $((i % 2)) -eq 0 ] && echo pa || echo pb)
  m=$([ $((i % 4)) -lt 2 ] && echo mlp || echo convnet)
  FXC_REMOTE_CACHE_PREFIX=par FXC_REMOTE_CACHE=$url "$fxc" "${args[@]}" --cache-dir="$tmp/$host" \
    --log=cache -o "$tmp/p$i.$m.fxo" "$fx/$m.pt2" >"$tmp/p$i.out" 2>"$tmp/p$i.err" &
  pids+=($!)
done
pfail=0
for p in "${pids[@]}"; do wait "$p" || pfail=$((pfail + 1)); done
[ "$pfail" -eq 0 ] && ok "16 parallel compiles succeed" || bad "$pfail parallel compiles failed"
pbad=0
for i in $(seq 16); do
  f=$(ls "$tmp"/p$i.*.fxo 2>/dev/null); case $f in *mlp*) r=$tmp/ref.fxo ;; *) r=$tmp/refc.fxo ;; esac
  cmp -s "$f" "$r" || pbad=$((pbad + 1))
done
[ "$pbad" -eq 0 ] && ok "every parallel compile wrote the reference bytes" || bad "$pbad differ"
[ "$(cat "$tmp"/p*.err | grep -c warning)" -eq 0 ] && ok "no warnings in parallel" || bad "warnings" "$(cat "$tmp"/p*.err)"
[ "$(nkeys 'par:m:*')" -eq 2 ] && ok "one manifest per graph" || bad "manifests: $(nkeys 'par:m:*')"
[ "$(cat "$tmp"/p*.err | grep -c 'remote put .*: published,')" -eq 2 ] && ok "one writer wins per graph" \
  || bad "published: $(cat "$tmp"/p*.err | grep -c 'remote put .*: published,')"

# Publication as the server sees it: every blob with SET NX and an expiry, then the manifest
# with SET NX (the commit point: a reader that finds it finds whole blobs).
rc monitor >"$tmp/monitor" 2>&1 &
mpid=$!
sleep 0.3
check "a publication under MONITOR" 0 env FXC_REMOTE_CACHE_PREFIX=mon "$fxc" "${args[@]}" \
  --cache-dir="$tmp/mon" --remote-cache="$url" -o "$tmp/mon.fxo" "$g"
sleep 0.3
kill "$mpid"; wait "$mpid" 2>/dev/null
grep -a '"SET" "mon:' "$tmp/monitor" | sed 's/^[0-9.]* \[[^]]*\] //' | awk '{ print $1, substr($2, 1, 7), $(NF-2), $(NF-1), $NF }' >"$tmp/sets"
printf '%s\n' '"SET" "mon:b: "EX" "604800" "NX"' '"SET" "mon:b: "EX" "604800" "NX"' \
  '"SET" "mon:b: "EX" "604800" "NX"' '"SET" "mon:m: "EX" "604800" "NX"' >"$tmp/sets.want"
same "blobs first, then the manifest, each SET NX with an expiry" "$tmp/sets.want" "$tmp/sets"
[ "$(nkeys 'fxc:m:*')" -eq 3 ] && ok "the prefix keeps namespaces apart" || bad "fxc manifests: $(nkeys 'fxc:m:*')"

# --max-autotune choices are shared: A publishes them, B (another key, the same kernels)
# merges them before compiling.
check "A tunes" 0 "$fxc" "${args[@]}" --max-autotune --cache-dir="$tmp/ta" --remote-cache="$url" \
  -o "$tmp/ta.fxo" "$g"
n=$(rc hlen fxc:autotune)
[ "$n" -gt 0 ] && ok "the tuning choices are published ($n)" || bad "hlen fxc:autotune: $n"
check "B tunes with another key" 0 "$fxc" "${args[@]}" --max-autotune --verify-each \
  --cache-dir="$tmp/tb" --remote-cache="$url" --log=cache -o "$tmp/tb.fxo" "$g"
has "B merges A's choices" "$tmp/err" "remote tuning: $n choices merged"
[ -f "$tmp/tb/autotune.json" ] && ok "B's autotune.json holds them" || bad "no $tmp/tb/autotune.json"

# A corrupted and a truncated value: a warning, a miss, a local compile, never the bad bytes;
# the value is deleted and published again.
check "publish convnet under 'bad'" 0 env FXC_REMOTE_CACHE_PREFIX=bad "$fxc" "${args[@]}" \
  --cache-dir="$tmp/c1" --remote-cache="$url" -o "$tmp/c1.fxo" "$fx/convnet.pt2"
for k in $(rc --scan --pattern 'bad:b:*'); do rc setrange "$k" 100 "CORRUPTED" >/dev/null; done
check "a corrupted value" 0 env FXC_REMOTE_CACHE_PREFIX=bad "$fxc" "${args[@]}" \
  --cache-dir="$tmp/c2" --remote-cache="$url" -o "$tmp/c2.fxo" "$fx/convnet.pt2"
has "the corruption is detected" "$tmp/err" "checksum mismatch"
[ "$(warnings "$tmp/err")" -eq 1 ] && ok "one warning for a corrupted value" || bad "warnings" "$(cat "$tmp/err")"
same "a corrupted value is never used" "$tmp/refc.fxo" "$tmp/c2.fxo"
check "published again" 0 env FXC_REMOTE_CACHE_PREFIX=bad "$fxc" "${args[@]}" \
  --cache-dir="$tmp/c3" --remote-cache="$url" --log=cache -o "$tmp/c3.fxo" "$fx/convnet.pt2"
has "after the corrupted value, a remote hit again" "$tmp/err" "remote hit"
same "... with the right bytes" "$tmp/refc.fxo" "$tmp/c3.fxo"
mk=$(rc --scan --pattern 'bad:m:*' | head -1)
rc eval "redis.call('SET', KEYS[1], string.sub(redis.call('GET', KEYS[1]), 1, 60)) return 1" 1 "$mk" >/dev/null
check "a truncated value" 0 env FXC_REMOTE_CACHE_PREFIX=bad "$fxc" "${args[@]}" \
  --cache-dir="$tmp/c4" --remote-cache="$url" -o "$tmp/c4.fxo" "$fx/convnet.pt2"
has "the truncation is detected" "$tmp/err" "truncated"
[ "$(warnings "$tmp/err")" -eq 1 ] && ok "one warning for a truncated value" || bad "warnings" "$(cat "$tmp/err")"
same "a truncated value is never used" "$tmp/refc.fxo" "$tmp/c4.fxo"

# The size limit: an artifact over it is not published.
check "FXC_REMOTE_CACHE_MAX_VALUE=1K" 0 env FXC_REMOTE_CACHE_PREFIX=small FXC_REMOTE_CACHE_MAX_VALUE=1K \
  "$fxc" "${args[@]}" --cache-dir="$tmp/s" --remote-cache="$url" --log=cache -o "$tmp/s.fxo" "$g"
has "over the limit: not published" "$tmp/err" "over the remote value limit"
[ "$(nkeys 'small:*')" -eq 0 ] && ok "nothing stored over the limit" || bad "small keys: $(nkeys 'small:*')"

# Usage errors: a malformed URL (flag or environment), without the password.
check "a malformed --remote-cache" 2 "$fxc" "${args[@]}" --remote-cache=http://u:hunter2@x:1 "$g"
has "names the URL syntax" "$tmp/err" "expected redis://"
hasnt "hides the password" "$tmp/err" "hunter2"
check "a malformed FXC_REMOTE_CACHE" 2 env FXC_REMOTE_CACHE=redis://host:notaport "$fxc" "${args[@]}" "$g"
has "names the variable" "$tmp/err" "FXC_REMOTE_CACHE"

# A server that is full: one warning, the compile goes on.
rc config set maxmemory 1 >/dev/null; rc config set maxmemory-policy noeviction >/dev/null
check "a full server" 0 env FXC_REMOTE_CACHE_PREFIX=full "$fxc" "${args[@]}" --cache-dir="$tmp/f" \
  --remote-cache="$url" -o "$tmp/f.fxo" "$g"
has "full: the server's reason" "$tmp/err" "OOM"
[ "$(warnings "$tmp/err")" -eq 1 ] && ok "one warning for a full server" || bad "warnings" "$(cat "$tmp/err")"
same "full: the artifact is right" "$tmp/ref.fxo" "$tmp/f.fxo"
rc config set maxmemory 0 >/dev/null

# A stopped (unresponsive) server: every command times out; one warning, no hang.
kill -STOP "$rpid"
t0=$(date +%s)
check "a stopped server" 0 env FXC_REMOTE_CACHE_TIMEOUT=300 timeout 60 "$fxc" "${args[@]}" \
  --cache-dir="$tmp/st" --remote-cache="$url" -o "$tmp/st.fxo" "$g"
t1=$(date +%s)
kill -CONT "$rpid"
has "stopped: timed out" "$tmp/err" "timed out"
[ "$(warnings "$tmp/err")" -eq 1 ] && ok "one warning for a stopped server" || bad "warnings" "$(cat "$tmp/err")"
[ $((t1 - t0)) -lt 30 ] && ok "a stopped server does not hang the compile ($((t1 - t0)) s)" || bad "took $((t1 - t0)) s"

# Authentication: a wrong password is one warning; the right one from the environment or a file
# works, and no log line shows it.
stop_redis
pw=s3cret-pw
start_redis --requirepass "$pw"
check "a wrong password" 0 "$fxc" "${args[@]}" --cache-dir="$tmp/w" \
  --remote-cache="redis://:wrong-pw@127.0.0.1:$port" --log=cache -o "$tmp/w.fxo" "$g"
[ "$(warnings "$tmp/err")" -eq 1 ] && ok "one warning for a wrong password" || bad "warnings" "$(cat "$tmp/err")"
has "the warning says authentication" "$tmp/err" "authentication refused"
hasnt "the wrong password is not printed" "$tmp/err" "wrong-pw"
has "the URL is printed redacted" "$tmp/err" "redis://:***@127.0.0.1:$port"
same "wrong password: the artifact is right" "$tmp/ref.fxo" "$tmp/w.fxo"
check "no password" 0 "$fxc" "${args[@]}" --cache-dir="$tmp/w2" --remote-cache="$url" -o "$tmp/w2.fxo" "$g"
has "no password: the server's refusal" "$tmp/err" "NOAUTH"
check "the password from FXC_REMOTE_CACHE_PASSWORD" 0 env FXC_REMOTE_CACHE_PASSWORD=$pw \
  "$fxc" "${args[@]}" --cache-dir="$tmp/w3" --remote-cache="$url" --log=cache -o "$tmp/w3.fxo" "$g"
has "authenticated: published" "$tmp/err" "remote put"
hasnt "the password is not printed" "$tmp/err" "$pw"
printf '%s\n' "$pw" >"$tmp/pwfile"
check "the password from FXC_REMOTE_CACHE_PASSWORD_FILE" 0 env FXC_REMOTE_CACHE_PASSWORD_FILE=$tmp/pwfile \
  "$fxc" "${args[@]}" --cache-dir="$tmp/w4" --remote-cache="$url" --log=cache -o "$tmp/w4.fxo" "$g"
has "authenticated from a file: a remote hit" "$tmp/err" "remote hit"
check "the password in the URL" 0 "$fxc" "${args[@]}" --cache-dir="$tmp/w5" \
  --remote-cache="redis://default:$pw@127.0.0.1:$port/0" --log=cache -o "$tmp/w5.fxo" "$g"
has "authenticated from the URL (user and password): a remote hit" "$tmp/err" "remote hit"
hasnt "the URL's password is not printed" "$tmp/err" "$pw"

check "an unreadable password file" 0 env FXC_REMOTE_CACHE_PASSWORD_FILE=$tmp/nonexistent \
  "$fxc" "${args[@]}" --cache-dir="$tmp/w6" --remote-cache="$url" -o "$tmp/w6.fxo" "$g"
[ "$(warnings "$tmp/err")" -eq 1 ] && ok "one warning for an unreadable password file" || bad "warnings" "$(cat "$tmp/err")"
check "a bad FXC_REMOTE_CACHE_TIMEOUT" 2 env FXC_REMOTE_CACHE_TIMEOUT=soon "$fxc" "${args[@]}" \
  --cache-dir="$tmp/w7" --remote-cache="$url" -o "$tmp/w7.fxo" "$g"
has "names the variable" "$tmp/err" "FXC_REMOTE_CACHE_TIMEOUT"

# The server killed in the middle of 16 parallel compiles: every one succeeds with at most one
# warning, none hangs, every artifact is right.
pids=()
for i in $(seq 16); do
  m=$([ $((i % 2)) -eq 0 ] && echo mlp || echo convnet)
  FXC_REMOTE_CACHE_PASSWORD=$pw FXC_REMOTE_CACHE_PREFIX=kill timeout 120 "$fxc" "${args[@]}" \
    --cache-dir="$tmp/k$i" --remote-cache="$url" -o "$tmp/k$i.$m.fxo" "$fx/$m.pt2" \
    >"$tmp/k$i.out" 2>"$tmp/k$i.err" &
  pids+=($!)
done
sleep 0.5
kill -9 "$rpid"; wait "$rpid" 2>/dev/null; rpid=
kfail=0
for p in "${pids[@]}"; do wait "$p" || kfail=$((kfail + 1)); done
[ "$kfail" -eq 0 ] && ok "a killed server fails no compile" || bad "$kfail compiles failed"
kbad=0; kwarn=0
for i in $(seq 16); do
  f=$(ls "$tmp"/k$i.*.fxo 2>/dev/null); case $f in *mlp*) r=$tmp/ref.fxo ;; *) r=$tmp/refc.fxo ;; esac
  cmp -s "$f" "$r" || kbad=$((kbad + 1))
  [ "$(warnings "$tmp/k$i.err")" -le 1 ] || kwarn=$((kwarn + 1))
done
[ "$kbad" -eq 0 ] && ok "a killed server: every artifact is right" || bad "$kbad differ"
[ "$kwarn" -eq 0 ] && ok "a killed server: at most one warning per compile" || bad "$kwarn warned more"

# No server at all: one warning.
check "no server" 0 "$fxc" "${args[@]}" --cache-dir="$tmp/n" --remote-cache="$url" -o "$tmp/n.fxo" "$g"
has "down: cannot connect" "$tmp/err" "cannot connect"
[ "$(warnings "$tmp/err")" -eq 1 ] && ok "one warning for a server that is down" || bad "warnings" "$(cat "$tmp/err")"
check "--explain-cache with the server down" 0 "$fxc" "${args[@]}" --cache-dir="$tmp/b" \
  --remote-cache="$url" --explain-cache "$g"
has "explain: remote unavailable" "$tmp/out" "unavailable"

exit $fail
