#!/usr/bin/env bash
# --max-autotune on the CPU: a cold compile times candidate grains per kernel, runs correctly and
# writes autotune.json; a warm one reuses every choice without timing; a corrupt file is
# discarded with a log line and rebuilt; --no-cache tunes without storing; CUDA without a device
# is an error (test/gpu/e2e/autotune_cuda.sh tunes on the GPU).
# Usage: autotune.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
unset FXC_CACHE_DIR FXC_LOGS FXC_LOGS_OUT FXC_COMPILE_DEBUG
export HOME=$tmp/home XDG_CACHE_HOME=
fail=0
. "$src/test/lib/common.sh"
count() { grep -cF -- "$2" "$1"; }

c=$tmp/c
run=(--device=cpu --backend=inductor --max-autotune --log=autotune --run "$fx/mlp.pt2"
     --inputs "$fx/mlp.io.safetensors" --expect "$fx/mlp.io.safetensors" --rtol=1e-3 --atol=1e-4)

check "cold: tunes and matches the expected outputs" 0 "$fxc" --cache-dir="$c" "${run[@]}"
has "cold: candidates are timed" "$tmp/err" "[fxc:autotune] info: "
has "cold: a choice per kernel" "$tmp/err" "-> grain="
hasnt "cold: nothing cached yet" "$tmp/err" ": cached grain="
tuned=$(count "$tmp/err" "-> grain=")
[ "$tuned" -ge 1 ] && ok "cold: $tuned kernels tuned" || bad "cold: no kernel tuned"
# Every choice is the fastest candidate or says why not ("kept: ... within the N% ...").
python3 - "$tmp/err" > "$tmp/why" <<'PY'
import re, sys
for line in open(sys.argv[1]):
    m = re.search(r': candidates (.*) -> (grain=\d+)(.*)$', line)
    if not m: continue
    times = {g: float(t) for g, t in re.findall(r'(grain=\d+) ([0-9.]+)', m.group(1))}
    fastest = min(times, key=times.get)
    if times[fastest] < times[m.group(2)] and 'kept:' not in m.group(3):
        print("unexplained: " + line.strip())
PY
if [ -s "$tmp/why" ]; then bad "a slower candidate kept without a reason" "$(cat "$tmp/why")"
else ok "each choice is the fastest or explains why it is kept"; fi
if [ -f "$c/autotune.json" ]; then ok "autotune.json written"; else bad "no $c/autotune.json"; fi
has "autotune.json has entries keyed by device" "$c/autotune.json" '"cpu '
has "autotune.json records the choice" "$c/autotune.json" '"choice": "grain='
cp "$c/autotune.json" "$tmp/first.json"

check "warm: runs and matches" 0 "$fxc" --cache-dir="$c" "${run[@]}"
hasnt "warm: nothing timed" "$tmp/err" "candidates"
hits=$(count "$tmp/err" ": cached grain=")
[ "$hits" -eq "$tuned" ] && ok "warm: $hits cached hits" || bad "warm: $hits hits, want $tuned"
cmp -s "$c/autotune.json" "$tmp/first.json" && ok "warm: autotune.json unchanged" \
  || bad "warm: autotune.json rewritten"

echo '{"version": 1, "entries": {"x": 5' >"$c/autotune.json"
check "corrupt: still runs and matches" 0 "$fxc" --cache-dir="$c" "${run[@]}"
has "corrupt: discarded with a log line" "$tmp/err" "discarded corrupt $c/autotune.json"
has "corrupt: tuned again" "$tmp/err" "-> grain="
has "corrupt: rebuilt" "$c/autotune.json" '"choice": "grain='

printf '{"version": 1, "entries": {}}\n' >"$c/autotune.json"
check "empty file: tunes" 0 "$fxc" --cache-dir="$c" "${run[@]}"
has "empty file: tuned" "$tmp/err" "-> grain="

check "--no-cache: tunes without storing" 0 "$fxc" --no-cache "${run[@]}"
has "--no-cache: says so" "$tmp/err" "not remembered"
[ ! -e "$HOME/.cache/fxc/autotune.json" ] && ok "--no-cache: no file" || bad "--no-cache wrote a file"

check "without --log: runs (through the compile cache)" 0 "$fxc" --cache-dir="$tmp/d" \
  --device=cpu --max-autotune --run "$fx/mlp.pt2" --inputs "$fx/mlp.io.safetensors" \
  --expect "$fx/mlp.io.safetensors" --rtol=1e-3 --atol=1e-4
[ -f "$tmp/d/autotune.json" ] && ok "without --log: autotune.json written" || bad "no autotune.json"
# CUDA tuning times candidates on the device (test/gpu/e2e/autotune_cuda.sh); without one, even
# an artifact (no run) cannot be tuned, and --emit=ptx neither.
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  echo "skip: a CUDA driver is installed; the GPU tests cover --device=cuda --max-autotune"
else
  check "--device=cuda without a device: error" 1 "$fxc" --cache-dir="$tmp/d" --device=cuda \
    --max-autotune -o "$tmp/m.fxo" "$fx/mlp.pt2"
  has "--device=cuda message" "$tmp/err" \
    "error: --max-autotune needs a CUDA device to time its candidates: no CUDA driver/device"
  [ ! -e "$tmp/m.fxo" ] && ok "--device=cuda without a device: no artifact" || bad "wrote m.fxo"
  check "--emit=ptx without a device: error" 1 "$fxc" --cache-dir="$tmp/d" --device=cuda \
    --max-autotune --emit=ptx -o "$tmp/m.ptx" "$fx/mlp.pt2"
  has "--emit=ptx message" "$tmp/err" "needs a CUDA device to time its candidates"
fi
check "--backend=eager is a usage error" 2 "$fxc" --backend=eager --max-autotune --run "$fx/mlp.pt2"

exit $fail
