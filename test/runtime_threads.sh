#!/usr/bin/env bash
# One loaded .fxo run concurrently through libfxcrt.so (examples/embed_cpp, the C++ wrapper):
# 8 threads x 200 runs of block.fxo compared byte for byte with one reference run, then the
# same while the main thread swaps the weights in from a .safetensors file (each result must be
# the old weights' or the new weights'). With FXC_TSAN=1 the example is built with
# -fsanitize=thread against a TSan build's libfxcrt.so (tools/tsan.sh runs it so).
# Usage: runtime_threads.sh <fxc>   (libfxcrt.so from fxc's folder, or from $FXC_LIBDIR)
set -u
fxc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
build=${FXC_LIBDIR:-$(cd "$(dirname "$fxc")" && pwd)}
fx=$src/test/fixtures
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
cd "$tmp" || exit 1
export FXC_CACHE_DIR= XDG_CACHE_HOME=$tmp/xdg-unused
san=; [ "${FXC_TSAN:-0}" = 1 ] && san=-fsanitize=thread
check "c++ builds examples/embed_cpp ${san:+(TSan)}" 0 \
  c++ -std=c++17 -O1 -g $san -pthread -I"$src/include" -o embed_cpp \
  "$src/examples/embed_cpp/main.cpp" -L"$build" -lfxcrt -Wl,-rpath,"$build"
check "block.fxo" 0 "$fxc" --no-cache --device=cpu "$fx/block.pt2" -o block.fxo
check "8 threads x 200 runs of block.fxo" 0 ./embed_cpp block.fxo 8 200
has "8 threads x 200 runs: every result equal" "$tmp/out" "ok: 8 threads x 200 runs"
python3 "$src/tools/make_big_fxg.py" "$tmp/swap" 4 64 128 >/dev/null
check "swap.fxo" 0 "$fxc" --no-cache --device=cpu swap.fxg -o swap.fxo
python3 - <<'PY'
import array, struct
st = open('swap.safetensors', 'rb').read(); n = struct.unpack('<Q', st[:8])[0]
data = array.array('f'); data.frombytes(st[8 + n:])
data = array.array('f', (x * 0.5 for x in data))  # halving is exact in float32
open('new.safetensors', 'wb').write(st[:8 + n] + data.tobytes())
PY
check "8 threads x 200 runs while the weights are swapped" 0 ./embed_cpp swap.fxo 8 200 new.safetensors
has "swapped: every result is the old or the new weights'" "$tmp/out" "ok: 8 threads x 200 runs"
exit $fail
