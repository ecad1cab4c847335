#!/usr/bin/env bash
# The compile cache: a cold compile stores one entry and a warm one hits it with the same bytes;
# parallel compiles of one graph into one fresh cache all succeed and leave one entry; corrupt
# entries are discarded and rebuilt; a hit writes the artifact over any file and to standard
# output, and a ResNet-50 hit does not read its 94 MB into memory; --no-cache, --cache-dir,
# FXC_CACHE_DIR and XDG_CACHE_HOME; every input of the key misses when it changes; a size limit
# (FXC_CACHE_MAX_SIZE, --cache-max-size) evicts the least recently used entries, a hit refreshes
# an entry, bad sizes are usage errors, 0 is unlimited, and parallel compiles that evict each
# other's entries all write the right artifacts.
# Usage: cache.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
unset FXC_CACHE_DIR FXC_CACHE_MAX_SIZE FXC_LOGS FXC_LOGS_OUT FXC_COMPILE_DEBUG
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
[ "$(stat -c %i "$(find "$c" -name '*.entry')")" = "$(stat -c %i "$tmp/cold.fxo")" ] &&
  ok "the cold compile's output became the entry (a hard link)" || bad "the cold output is a copy"
# The reference bytes in a file of their own: the tests below damage the entry in place.
cp "$tmp/cold.fxo" "$tmp/cold.copy" && mv -f "$tmp/cold.copy" "$tmp/cold.fxo"
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

# The entry is the artifact as is (an .fxo is compressed already), read-only, with a check file
# beside it, so a hit places it with a hard link (or a copy in the kernel across file systems).
# It replaces a longer or a shorter file, and writes standard output, all to exactly the
# artifact's bytes; an output it cannot write is the same error as the compile's.
entry=$(find "$c" -name '*.entry')
same "the entry holds the artifact as is" "$tmp/cold.fxo" "$entry"
[ "$(stat -c %a "$entry")" = 444 ] && ok "the entry is read-only" || bad "entry mode $(stat -c %a "$entry")"
grep -q '^fxc-cache-entry 3$' "${entry%.entry}.check" && ok "a check file beside it" || bad "no check file"
[ "$(stat -c %i "$entry")" = "$(stat -c %i "$tmp/warm.fxo")" ] &&
  ok "a hit links the entry as the output" || bad "the warm output is a copy"
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
par6() { # par6 <name> <env assignments> <graph>x6: six compiles at once into the cache $tmp/<name>,
  # the i-th of the i-th graph to $tmp/<name><i>.fxo; 1 when one exits non-zero (its log printed)
  local name=$1 envs=$2 i st=0 pids=(); shift 2
  for i in 1 2 3 4 5 6; do
    env $envs "$fxc" "${args[@]}" --cache-dir="$tmp/$name" -o "$tmp/$name$i.fxo" "${!i}" \
      >"$tmp/$name$i.log" 2>&1 &
    pids+=($!)
  done
  for i in 0 1 2 3 4 5; do wait "${pids[$i]}" || { st=1; cat "$tmp/$name$((i + 1)).log"; }; done
  return $st
}
p=$tmp/par
pfail=0
par6 par "" "$g" "$g" "$g" "$g" "$g" "$g" || pfail=1
[ $pfail -eq 0 ] && ok "6 parallel compiles all exit 0" || bad "a parallel compile failed"
for i in 2 3 4 5 6; do
  cmp -s "$tmp/par1.fxo" "$tmp/par$i.fxo" || { bad "parallel output $i differs"; pfail=1; }
done
same "parallel outputs are the artifact" "$tmp/cold.fxo" "$tmp/par1.fxo"
[ "$(entries "$p")" -eq 1 ] && ok "exactly one entry after parallel compiles" || bad "entries: $(entries "$p")"
[ "$(temps "$p")" -eq 0 ] && ok "no temporary files left" || bad "temporary files: $(find "$p" -name '*.tmp-*')"
# The graph's digest memo (docs/cache.md) is there only when the graph is older than 2 s.
[ "$(find "$p" -type f -not -path "$p/digests/*" -not -path "$p/direct/*" | wc -l)" -eq 4 ] && [ -f "$p/stats" ] \
  && [ "$(find "$p" -name '*.manifest' | wc -l)" -eq 1 ] && [ "$(find "$p" -name '*.check' | wc -l)" -eq 1 ] \
  && [ "$(find "$p" -path "$p/digests/*" | wc -l)" -le 1 ] && [ "$(find "$p" -type f -path "$p/direct/*" | wc -l)" -le 1 ] \
  && ok "nothing else in the cache but its stats, the entry, its check file and key manifest, a digest and a direct memo" || bad "files: $(find "$p" -type f)"
grep -qx "entries 1" "$p/stats" && ok "the stats count one entry" || bad "stats: $(cat "$p/stats")"

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
corrupt "first-byte-flipped" flip 0
corrupt "longer" sh -c "printf x >> '$entry'"
edit_check() { sed -i "$1" "${entry%.entry}.check"; }
corrupt "checksum-changed" edit_check 's/^xxh3 ./xxh3 g/'
corrupt "size-changed" edit_check 's/^size /size 1/'
corrupt "format-2" edit_check 's/^fxc-cache-entry 3$/fxc-cache-entry 2/'
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
for flags in "--backend=eager" "--mode=train" "--inject-bug=relu:accuracy" "--verify-each" "--device=cuda" "--dtype=bf16" "--dtype=f16"; do
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

# Direct mode (ccache's): a hit finds the key through a memo of what decides the import, without
# importing; a changed external weights file or another --inputs file is not such a hit.
d=$tmp/direct
dc() { "$fxc" "${args[@]}" --cache-dir="$d" --log=+cache "$@"; }
check "direct: cold" 0 dc -o "$tmp/d1.fxo" "$tmp/w/block.fxg"
hasnt "a cold compile is no direct hit" "$tmp/err" "(direct: no import)"
check "direct: warm" 0 dc -o "$tmp/d2.fxo" "$tmp/w/block.fxg"
has "a warm compile hits without importing" "$tmp/err" "(direct: no import)"
same "a direct hit writes the artifact" "$tmp/d1.fxo" "$tmp/d2.fxo"
check "direct: --log=driver imports" 0 "$fxc" "${args[@]}" --cache-dir="$d" --log=+cache,+driver -o "$tmp/d3.fxo" "$tmp/w/block.fxg"
hasnt "--log=driver is no direct hit" "$tmp/err" "(direct: no import)"
has "but a hit" "$tmp/err" "[fxc:cache] info: hit "
python3 -c 'import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[-1] ^= 1; open(p, "wb").write(b)' "$tmp/w/block.safetensors"
check "direct: changed weights" 0 dc -o "$tmp/d4.fxo" "$tmp/w/block.fxg"
hasnt "changed weights are no direct hit" "$tmp/err" "(direct: no import)"
has "they miss" "$tmp/err" "[fxc:cache] info: miss "
cmp -s "$tmp/d1.fxo" "$tmp/d4.fxo" && bad "changed weights gave the old artifact" || ok "changed weights give another artifact"
cp "$tmp/w/block.safetensors.orig" "$tmp/w/block.safetensors"
check "direct: weights restored" 0 dc -o "$tmp/d5.fxo" "$tmp/w/block.fxg"
has "the old entry hits" "$tmp/err" "[fxc:cache] info: hit "
same "with the old artifact" "$tmp/d1.fxo" "$tmp/d5.fxo"
check "direct: --inputs" 0 dc --inputs "$fx/mlp.io.safetensors" -o "$tmp/d6.fxo" "$fx/mlp.pt2"
check "direct: the same --inputs" 0 dc --inputs "$fx/mlp.io.safetensors" -o "$tmp/d7.fxo" "$fx/mlp.pt2"
has "--inputs hits directly" "$tmp/err" "(direct: no import)"
check "direct: without --inputs" 0 dc -o "$tmp/d8.fxo" "$fx/mlp.pt2"
hasnt "is another direct key" "$tmp/err" "(direct: no import)"
check "direct: a missing graph" 1 dc -o "$tmp/d9.fxo" "$tmp/w/none.fxg"
has "is the import's error" "$tmp/err" "$tmp/w/none.fxg: error:"

# Eviction. Three graphs whose entries have the same size (block.pt2's graph under three names of
# one length), a limit of two entries and a half: the third store evicts the least recently used.
lw=$tmp/lw && mkdir -p "$lw"
"$fxc" --emit=fxg -o "$lw/g1.fxg" "$fx/block.pt2" && cp "$lw/g1.fxg" "$lw/g2.fxg" && cp "$lw/g1.fxg" "$lw/g3.fxg"
for i in 1 2 3; do "$fxc" "${args[@]}" --no-cache -o "$lw/ref$i.fxo" "$lw/g$i.fxg"; done
es() { stat -c %s "$lw/ref$1.fxo"; } # the size of g<n>'s entry
esize=$(es 1)
limit=$((esize * 5 / 2)) # the artifacts' sizes differ by a few bytes at most
e=$tmp/lru
mkdir -p "$e" && echo '{}' >"$e/autotune.json" && touch -d '2000-01-01' "$e/autotune.json"
lru() { # lru <graph number> [flags]: compile g<n> into the eviction cache, output o<n>.fxo
  local i=$1; shift
  check "compile g$i ($*)" 0 env FXC_CACHE_MAX_SIZE=$limit "$fxc" "${args[@]}" --cache-dir="$e" --log=cache "$@" -o "$lw/o$i.fxo" "$lw/g$i.fxg"
  cp "$tmp/err" "$lw/log$i"
  same "g$i's artifact" "$lw/ref$i.fxo" "$lw/o$i.fxo"
}
key_in() { sed -n 's/.*info: \(stored\|hit\) \([0-9a-f]*\).*/\2/p' "$1" | head -1; }
lru 1; k1=$(key_in "$lw/log1")
lru 2; k2=$(key_in "$lw/log2")
hasnt "two entries fit" "$lw/log2" "evicted"
lru 3; k3=$(key_in "$lw/log3")
has "the third store evicts one entry" "$lw/log3" "[fxc:cache] info: evicted 1 entry ($(es 1) bytes); the cache holds 2 entries, $(($(es 2) + $(es 3))) bytes (limit $limit)"
[ ! -e "$e/${k1:0:2}/$k1.entry" ] && ok "the oldest entry (g1) is evicted" || bad "g1's entry is still there"
[ ! -e "$e/${k1:0:2}/$k1.manifest" ] && [ -e "$e/${k2:0:2}/$k2.manifest" ] \
  && ok "its key manifest goes with it" || bad "g1's manifest is still there, or g2's is gone"
[ -e "$e/${k2:0:2}/$k2.entry" ] && [ -e "$e/${k3:0:2}/$k3.entry" ] && ok "the two recent entries are kept" || bad "g2 or g3 evicted"
[ -e "$e/autotune.json" ] && ok "autotune.json is not evicted" || bad "autotune.json was removed"
grep -qx "bytes $(($(es 2) + $(es 3)))" "$e/stats" && ok "the stats count what is left" || bad "stats: $(cat "$e/stats")"
lru 2
has "a hit on the older entry (g2)" "$lw/log2" "[fxc:cache] info: hit $k2"
lru 1
has "g1 is compiled again" "$lw/log1" "[fxc:cache] info: stored $k1"
has "and evicts one entry" "$lw/log1" "[fxc:cache] info: evicted 1 entry"
[ -e "$e/${k2:0:2}/$k2.entry" ] && ok "the hit refreshed g2: it survives" || bad "g2 was evicted after its hit"
[ ! -e "$e/${k3:0:2}/$k3.entry" ] && ok "g3, now the least recently used, is evicted" || bad "g3 is still there"
check "--log=+cache names the evicted entry" 0 env FXC_CACHE_MAX_SIZE=$limit "$fxc" "${args[@]}" --cache-dir="$e" --log=+cache -o "$lw/o3.fxo" "$lw/g3.fxg"
has "evicted g2 (the least recently used)" "$tmp/err" "[fxc:cache] debug: evicted $k2 ($(es 2) bytes)"
# The flag wins over the variable, and 0 is unlimited.
check "--cache-max-size=0 over FXC_CACHE_MAX_SIZE" 0 env FXC_CACHE_MAX_SIZE=1 "$fxc" "${args[@]}" --cache-dir="$e" --cache-max-size=0 --log=cache -o "$lw/o2.fxo" "$lw/g2.fxg"
hasnt "nothing evicted under --cache-max-size=0" "$tmp/err" "evicted"
check "FXC_CACHE_MAX_SIZE=0" 0 env FXC_CACHE_MAX_SIZE=0 "$fxc" "${args[@]}" --cache-dir="$e" --log=cache -o "$tmp/x.fxo" "$g"
hasnt "nothing evicted under FXC_CACHE_MAX_SIZE=0" "$tmp/err" "evicted"
[ "$(entries "$e")" -eq 4 ] && ok "0 is unlimited: four entries" || bad "entries: $(entries "$e")"
check "--cache-max-size=1M" 0 "$fxc" "${args[@]}" --cache-dir="$e" --cache-max-size=1M --log=cache -o "$lw/o1.fxo" "$lw/g1.fxg"
has "a hit does not evict" "$tmp/err" "[fxc:cache] info: hit $k1"
[ "$(entries "$e")" -eq 4 ] && ok "a hit stores nothing and evicts nothing" || bad "entries: $(entries "$e")"
# Bad sizes are usage errors.
check "--cache-max-size=5GB" 2 "$fxc" "${args[@]}" --cache-dir="$e" --cache-max-size=5GB -o "$tmp/x.fxo" "$g"
has "names the flag and the value" "$tmp/err" "--cache-max-size: invalid size '5GB'"
has "says what a size is" "$tmp/err" "K, M, G or T suffix"
check "--cache-max-size=-1" 2 "$fxc" "${args[@]}" --cache-max-size=-1 -o "$tmp/x.fxo" "$g"
check "FXC_CACHE_MAX_SIZE=lots" 2 env FXC_CACHE_MAX_SIZE=lots "$fxc" "${args[@]}" --cache-dir="$e" -o "$tmp/x.fxo" "$g"
has "names the variable and the value" "$tmp/err" "fxc: error: FXC_CACHE_MAX_SIZE: invalid size 'lots'"
# Six parallel compiles of three graphs into a cache with room for one entry and a half: each
# store evicts the others' entries while they look up and copy them; all write their artifacts.
p=$tmp/plru
plru=(plru FXC_CACHE_MAX_SIZE=$((esize * 3 / 2)) "$lw"/g{1,2,3}.fxg "$lw"/g{1,2,3}.fxg)
pfail=0
par6 "${plru[@]}" || pfail=1
[ $pfail -eq 0 ] && ok "6 parallel evicting compiles all exit 0" || bad "a parallel evicting compile failed"
for i in 1 2 3 4 5 6; do
  cmp -s "$lw/ref$(((i - 1) % 3 + 1)).fxo" "$tmp/plru$i.fxo" || { bad "parallel evicting output $i is wrong"; pfail=1; }
done
[ $pfail -eq 0 ] && ok "and write the right artifacts"
for round in 1 2; do # then hits and stores race with evictions
  par6 "${plru[@]}" || pfail=1
  for i in 1 2 3 4 5 6; do cmp -s "$lw/ref$(((i - 1) % 3 + 1)).fxo" "$tmp/plru$i.fxo" || pfail=1; done
done
[ $pfail -eq 0 ] && ok "two more parallel rounds (hits racing with evictions) are right" || bad "a later parallel round failed"
[ "$(entries "$p")" -le 2 ] && ok "the cache stays near its limit: $(entries "$p") entries" || bad "entries: $(entries "$p")"
[ "$(temps "$p")" -eq 0 ] && ok "no temporary files left by evicting compiles" || bad "temporary files left"

# A cache that cannot be written (here: its parent is a file) is not an error of the compile.
echo x > "$tmp/file"
check "unwritable cache" 0 "$fxc" "${args[@]}" --cache-dir="$tmp/file/c" -o "$tmp/x.fxo" "$g"
has "an unwritable cache warns" "$tmp/err" "not stored"
same "and the artifact is written all the same" "$tmp/cold.fxo" "$tmp/x.fxo"

# A run that fails names the user's graph on a miss and on a hit alike, never the cache entry.
if "$fxc" --version | grep -q "built without LLVM"; then
  echo "not run here (needs LLVM): run errors on a cache hit"
else
  cp "$src/test/error/cholesky_not_pd.fxg" "$tmp/notpd.fxg"
  for round in miss hit; do
    check "a failing run ($round)" 1 "$fxc" --backend=inductor --device=cpu --run --seed=1 \
      --cache-dir="$tmp/runerr" --log=cache "$tmp/notpd.fxg"
    has "its error names the graph ($round)" "$tmp/err" "notpd.fxg: error: node 'L_linalg_cholesky_ex'"
    hasnt "and not the cache entry ($round)" "$tmp/err" ".entry: error"
  done
  has "the second run was a hit" "$tmp/err" "[fxc:cache] info: hit"
fi

if [ $fail -eq 0 ]; then echo "cache: all passed"; else echo "cache: FAILED"; fi
exit $fail
