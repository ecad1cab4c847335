#!/usr/bin/env bash
# The compile cache: a cold compile stores one entry and a warm one hits it with the same bytes;
# parallel compiles of one graph into one fresh cache all succeed and leave one entry; corrupt
# entries are discarded and rebuilt; a hit writes the artifact over any file and to standard
# output, and a ResNet-50 hit does not read its 94 MB into memory; --no-cache, --cache-dir,
# FXC_CACHE_DIR and XDG_CACHE_HOME; every input of the key misses when it changes.
# Usage: cache.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
unset FXC_CACHE_DIR FXC_LOGS FXC_LOGS_OUT FXC_COMPILE_DEBUG
export HOME=$tmp/home XDG_CACHE_HOME= # the default cache must not be the user's
fail=0
. "$src/test/lib/common.sh"
entries() { find "$1" -name '*.entry' 2>/dev/null | wc -l; }
temps() { find "$1" -name '*.tmp-*' 2>/dev/null | wc -l; }
ms() { date +%s%N | cut -c1-13; }

g=$fx/mlp.pt2
c=$tmp/c
args=(--device=cpu --backend=inductor)

# Cold, then warm: a miss that stores, then a hit that writes the same bytes.
check "cold compile" 0 "$fxc" "${args[@]}" --cache-dir="$c" --log=+cache -o "$tmp/cold.fxo" "$g"
has "cold compile misses" "$tmp/err" "[fxc:cache] info: miss "
has "cold compile stores" "$tmp/err" "[fxc:cache] info: stored "
[ "$(entries "$c")" -eq 1 ] && ok "one entry after a cold compile" || bad "entries: $(entries "$c")"
t0=$(ms)
check "warm compile" 0 "$fxc" "${args[@]}" --cache-dir="$c" --log=+cache -o "$tmp/warm.fxo" "$g"
t1=$(ms)
has "warm compile hits" "$tmp/err" "[fxc:cache] info: hit "
hasnt "warm compile does not store" "$tmp/err" "stored"
same "a hit writes the bytes the compile wrote" "$tmp/cold.fxo" "$tmp/warm.fxo"
check "--no-cache compile" 0 "$fxc" "${args[@]}" --no-cache --log=+cache -o "$tmp/nocache.fxo" "$g"
same "the cache changes no byte of the artifact" "$tmp/cold.fxo" "$tmp/nocache.fxo"
hasnt "--no-cache does not look up" "$tmp/err" "[fxc:cache]"
echo "     warm hit: $((t1 - t0)) ms for the whole fxc process"
[ $((t1 - t0)) -lt 2000 ] && ok "a warm hit takes under 2 s" || bad "warm hit took $((t1 - t0)) ms"
check "--run hits too" 0 "$fxc" "${args[@]}" --cache-dir="$c" --log=+cache --run \
  --inputs "$fx/mlp.io.safetensors" --expect "$fx/mlp.io.safetensors" --rtol=1e-3 --atol=1e-4 "$g"
has "--run hits the artifact the default action stored" "$tmp/err" "[fxc:cache] info: hit "
[ "$(entries "$c")" -eq 1 ] && ok "still one entry" || bad "entries: $(entries "$c")"

# The entry is a 4096-byte header and the artifact as is (an .fxo is compressed already), so a hit
# copies it out in the kernel. It overwrites a longer or a shorter file in place and cuts it, and
# writes standard output, all to exactly the artifact's bytes; an output it cannot write is the
# same error as the compile's.
entry=$(find "$c" -name '*.entry')
[ "$(stat -c %s "$entry")" -eq $(($(stat -c %s "$tmp/cold.fxo") + 4096)) ] &&
  ok "an entry is the artifact and a 4096-byte header" || bad "entry size $(stat -c %s "$entry")"
tail -c +4097 "$entry" >"$tmp/payload" && same "the entry holds the artifact as is" "$tmp/cold.fxo" "$tmp/payload"
head -c $(($(stat -c %s "$tmp/cold.fxo") * 3)) /dev/urandom >"$tmp/long.fxo"
check "a hit over a longer file" 0 "$fxc" "${args[@]}" --cache-dir="$c" --log=+cache -o "$tmp/long.fxo" "$g"
has "it hits" "$tmp/err" "[fxc:cache] info: hit "
same "and cuts the file to the artifact" "$tmp/cold.fxo" "$tmp/long.fxo"
printf 'x' >"$tmp/short.fxo"
check "a hit over a shorter file" 0 "$fxc" "${args[@]}" --cache-dir="$c" -o "$tmp/short.fxo" "$g"
same "writes the artifact" "$tmp/cold.fxo" "$tmp/short.fxo"
check "a hit to standard output" 0 "$fxc" "${args[@]}" --cache-dir="$c" --log=+cache -o - "$g"
has "it hits" "$tmp/err" "[fxc:cache] info: hit "
same "and writes the artifact" "$tmp/cold.fxo" "$tmp/out"
check "a hit into a missing folder" 1 "$fxc" "${args[@]}" --cache-dir="$c" -o "$tmp/nodir/x.fxo" "$g"
has "is an error naming the output" "$tmp/err" "$tmp/nodir/x.fxo: error: cannot write output file"
check "as without the cache" 1 "$fxc" "${args[@]}" --no-cache -o "$tmp/nodir/x.fxo" "$g"
has "the same error" "$tmp/err" "$tmp/nodir/x.fxo: error: cannot write output file"

# Asking for the compile's own output (a debug trace, compile logs, pass times) skips the lookup.
check "--debug-dir with a warm cache" 0 "$fxc" "${args[@]}" --cache-dir="$c" --log=+cache --debug-dir="$tmp/dbg" -o "$tmp/d.fxo" "$g"
has "--debug-dir skips the lookup" "$tmp/err" "not looking up"
ls "$tmp"/dbg/run_*/inductor/*/output_code.cpp >/dev/null 2>&1 && ok "and the debug trace is written" || bad "no debug trace"
check "--log=output_code with a warm cache" 0 "$fxc" "${args[@]}" --cache-dir="$c" --log=+cache,output_code -o "$tmp/d.fxo" "$g"
has "--log=output_code skips the lookup" "$tmp/err" "[fxc:output_code]"
check "--time-passes with a warm cache" 0 "$fxc" "${args[@]}" --cache-dir="$c" --time-passes -o "$tmp/d.fxo" "$g"
has "--time-passes reports the passes" "$tmp/err" "fxc pass timing report"
same "the artifact is the same" "$tmp/cold.fxo" "$tmp/d.fxo"

# Parallel compiles of one graph into one fresh cache: all succeed, same bytes, one entry.
p=$tmp/par
pids=()
for i in 1 2 3 4 5 6; do
  "$fxc" "${args[@]}" --cache-dir="$p" -o "$tmp/par$i.fxo" "$g" >"$tmp/par$i.log" 2>&1 &
  pids+=($!)
done
pfail=0
for i in 0 1 2 3 4 5; do wait "${pids[$i]}" || { pfail=1; cat "$tmp/par$((i + 1)).log"; }; done
[ $pfail -eq 0 ] && ok "6 parallel compiles all exit 0" || bad "a parallel compile failed"
for i in 2 3 4 5 6; do
  cmp -s "$tmp/par1.fxo" "$tmp/par$i.fxo" || { bad "parallel output $i differs"; pfail=1; }
done
same "parallel outputs are the artifact" "$tmp/cold.fxo" "$tmp/par1.fxo"
[ "$(entries "$p")" -eq 1 ] && ok "exactly one entry after parallel compiles" || bad "entries: $(entries "$p")"
[ "$(temps "$p")" -eq 0 ] && ok "no temporary files left" || bad "temporary files: $(find "$p" -name '*.tmp-*')"
[ "$(find "$p" -type f | wc -l)" -eq 1 ] && ok "nothing else in the cache" || bad "files: $(find "$p" -type f)"

# Corrupt entries: each is discarded with a warning (shown without --log) and rebuilt.
entry=$(find "$c" -name '*.entry')
size=$(stat -c %s "$entry")
corrupt() { # corrupt <description> <command that damages $entry>
  local desc=$1; shift
  "$@"
  check "compile over a $desc entry" 0 "$fxc" "${args[@]}" --cache-dir="$c" --log=+cache -o "$tmp/re.fxo" "$g"
  has "a $desc entry is discarded" "$tmp/err" "discarding corrupt entry"
  has "a $desc entry is rebuilt" "$tmp/err" "[fxc:cache] info: stored "
  same "the rebuilt artifact is the artifact ($desc)" "$tmp/cold.fxo" "$tmp/re.fxo"
  check "then it hits ($desc)" 0 "$fxc" "${args[@]}" --cache-dir="$c" --log=+cache -o "$tmp/re2.fxo" "$g"
  has "the rebuilt entry hits ($desc)" "$tmp/err" "[fxc:cache] info: hit "
}
corrupt "truncated" truncate -s $((size / 2)) "$entry"
corrupt "byte-flipped" sh -c "printf '\\377\\377\\377\\377' | dd of='$entry' bs=1 seek=$((size - 100)) conv=notrunc status=none"
corrupt "empty" truncate -s 0 "$entry"
flip() { printf '\377' | dd of="$entry" bs=1 seek="$1" conv=notrunc status=none; }
corrupt "first-payload-byte-flipped" flip 4096
corrupt "checksum-flipped" flip 56
corrupt "size-flipped" flip 48
corrupt "longer" sh -c "printf x >> '$entry'"
corrupt "format-1" sh -c "printf '\\001' | dd of='$entry' bs=1 seek=8 conv=notrunc status=none"
check "a corrupt entry warns without --log" 0 sh -c "truncate -s 10 '$entry' && '$fxc' ${args[*]} --cache-dir='$c' -o '$tmp/re.fxo' '$g'"
has "the warning names the entry" "$tmp/err" "[fxc:cache] warning: discarding corrupt entry $entry"

# ResNet-50 (an artifact of 94 MB of weights): a hit writes the same bytes as a compile, without
# reading the artifact into fxc's memory (its peak RSS stays far below the artifact's size above
# a small graph's hit).
r50=$src/bench/models/resnet50.fxg
rss_kb() { python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if r.returncode == 0 else -1)' "$@"; }
rc=$tmp/r50
check "ResNet-50 cold" 0 "$fxc" --device=cpu --cache-dir="$rc" -o "$tmp/r50.fxo" "$r50"
t0=$(ms)
check "ResNet-50 hit" 0 "$fxc" --device=cpu --cache-dir="$rc" --log=+cache -o "$tmp/r50.hit.fxo" "$r50"
t1=$(ms)
has "it hits" "$tmp/err" "[fxc:cache] info: hit "
echo "     ResNet-50 hit: $((t1 - t0)) ms for the whole fxc process"
same "the ResNet-50 hit writes the artifact" "$tmp/r50.fxo" "$tmp/r50.hit.fxo"
check "ResNet-50 --no-cache" 0 "$fxc" --device=cpu --no-cache -o "$tmp/r50.nc.fxo" "$r50"
same "which is the --no-cache artifact" "$tmp/r50.fxo" "$tmp/r50.nc.fxo"
big=$(rss_kb "$fxc" --device=cpu --cache-dir="$rc" -o "$tmp/r50.hit.fxo" "$r50")
small=$(rss_kb "$fxc" "${args[@]}" --cache-dir="$c" -o "$tmp/x.fxo" "$g")
art=$(($(stat -c %s "$tmp/r50.fxo") / 1024))
echo "     peak RSS: ResNet-50 hit $big KB, small hit $small KB, artifact $art KB"
[ "$big" -gt 0 ] && [ "$small" -gt 0 ] && [ $((big - small)) -lt $((art / 4)) ] &&
  ok "a hit does not read the artifact into memory" || bad "peak RSS $big KB (small hit: $small KB)"

# --no-cache writes nothing; FXC_CACHE_DIR, --cache-dir over it, XDG_CACHE_HOME, HOME.
check "--no-cache" 0 "$fxc" "${args[@]}" --no-cache --cache-dir="$tmp/nc" -o "$tmp/x.fxo" "$g"
[ ! -e "$tmp/nc" ] && ok "--no-cache leaves no cache" || bad "--no-cache wrote $tmp/nc"
check "FXC_CACHE_DIR" 0 env FXC_CACHE_DIR="$tmp/env" "$fxc" "${args[@]}" -o "$tmp/x.fxo" "$g"
[ "$(entries "$tmp/env")" -eq 1 ] && ok "FXC_CACHE_DIR holds the entry" || bad "FXC_CACHE_DIR: no entry"
check "--cache-dir over FXC_CACHE_DIR" 0 env FXC_CACHE_DIR="$tmp/env2" "$fxc" "${args[@]}" --cache-dir="$tmp/flag" -o "$tmp/x.fxo" "$g"
[ ! -e "$tmp/env2" ] && [ "$(entries "$tmp/flag")" -eq 1 ] && ok "--cache-dir wins" || bad "--cache-dir did not win"
check "XDG_CACHE_HOME" 0 env XDG_CACHE_HOME="$tmp/xdg" "$fxc" "${args[@]}" -o "$tmp/x.fxo" "$g"
[ "$(entries "$tmp/xdg/fxc")" -eq 1 ] && ok "\$XDG_CACHE_HOME/fxc holds the entry" || bad "XDG: no entry"
check "HOME" 0 "$fxc" "${args[@]}" -o "$tmp/x.fxo" "$g"
[ "$(entries "$HOME/.cache/fxc")" -eq 1 ] && ok "~/.cache/fxc holds the entry" || bad "HOME: no entry"

# Every input of the key: flags, the graph's bytes, its external weights, its name.
k=$tmp/k
key_of() { "$fxc" "${args[@]}" --cache-dir="$k" --log=+cache "$@" 2>&1 >/dev/null | sed -n 's/.*info: \(miss\|hit\) \([0-9a-f]*\).*/\2/p' | head -1; }
mkdir -p "$tmp/w" && "$fxc" --emit=fxg -o "$tmp/w/block.fxg" "$fx/block.pt2"
base=$(key_of -o "$tmp/k.fxo" "$tmp/w/block.fxg")
[ -n "$base" ] && ok "the key is logged" || bad "no key logged"
[ "$(key_of -o "$tmp/k.fxo" "$tmp/w/block.fxg")" = "$base" ] && ok "the same compile has the same key" || bad "key not stable"
[ "$(key_of -o "$tmp/other.fxo" "$tmp/w/block.fxg")" = "$base" ] && ok "the output name is not in the key" || bad "-o changed the key"
for flags in "--backend=eager" "--mode=train" "--inject-bug=relu:accuracy" "--verify-each" "--device=cuda"; do
  [ "$(key_of $flags -o "$tmp/k.fxo" "$tmp/w/block.fxg")" != "$base" ] && ok "$flags changes the key" || bad "$flags does not change the key"
done
cp "$tmp/w/block.safetensors" "$tmp/w/block.safetensors.orig"
python3 - "$tmp/w/block.safetensors" <<'EOF'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[-1] ^= 1; open(p, 'wb').write(b)
EOF
[ "$(key_of -o "$tmp/k.fxo" "$tmp/w/block.fxg")" != "$base" ] && ok "changed external weights change the key" || bad "weights not in the key"
cp "$tmp/w/block.safetensors.orig" "$tmp/w/block.safetensors"
printf '\n' >> "$tmp/w/block.fxg"
[ "$(key_of -o "$tmp/k.fxo" "$tmp/w/block.fxg")" != "$base" ] && ok "a changed graph file changes the key" || bad "graph bytes not in the key"
cp "$tmp/w/block.fxg" "$tmp/w/renamed.fxg"
[ "$(key_of -o "$tmp/k.fxo" "$tmp/w/renamed.fxg")" != "$(key_of -o "$tmp/k.fxo" "$tmp/w/block.fxg")" ] && ok "the graph's name is in the key" || bad "name not in the key"

# A cache that cannot be written (here: its parent is a file) is not an error of the compile.
echo x > "$tmp/file"
check "unwritable cache" 0 "$fxc" "${args[@]}" --cache-dir="$tmp/file/c" -o "$tmp/x.fxo" "$g"
has "an unwritable cache warns" "$tmp/err" "not stored"
same "and the artifact is written all the same" "$tmp/cold.fxo" "$tmp/x.fxo"

if [ $fail -eq 0 ]; then echo "cache: all passed"; else echo "cache: FAILED"; fi
exit $fail
