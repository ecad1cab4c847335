#!/usr/bin/env bash
# .fxo artifacts end to end on the CPU: the default action writes one (byte-identical when
# repeated), `fxc --run x.fxo` reproduces PyTorch (inference, train mode, an eager-backend
# artifact), corrupt and foreign files are clean errors, guards name the input and the guard,
# and examples/embed (C, through libfxcrt.so, no LLVM) runs an artifact.
# Usage: artifact.sh <fxc>
set -u
fxc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
build=$(cd "$(dirname "$fxc")" && pwd)
fx=$src/test/fixtures
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; [ -n "${2:-}" ] && echo "$2" | head -12 | sed 's/^/     /'; fail=1; }
# expect_ok <label> <cmd...>
expect_ok() {
  local label=$1; shift
  if out=$("$@" 2>&1); then ok "$label"; else bad "$label" "$out"; fi
}
# expect_error <label> <status> <message> <cmd...>: fails with that status and message on stderr
expect_error() {
  local label=$1 status=$2 msg=$3; shift 3
  out=$("$@" 2>&1); st=$?
  if [ $st -eq "$status" ] && grep -qF -- "$msg" <<<"$out"; then ok "$label"
  else bad "$label (status $st, want $status and '$msg')" "$out"; fi
}

cd "$work" || exit 1
# No compile cache: two compiles must each really compile for the determinism checks.
export FXC_CACHE_DIR= XDG_CACHE_HOME=$work/xdg-unused
nc=--no-cache
# The default action, and determinism: two compiles give the same bytes.
expect_ok "default action writes mlp.fxo" "$fxc" $nc --device=cpu "$fx/mlp.pt2"
[ -s mlp.fxo ] && ok "mlp.fxo exists" || bad "mlp.fxo exists"
expect_ok "compile again with -o" "$fxc" $nc --device=cpu "$fx/mlp.pt2" -o again.fxo
cmp -s mlp.fxo again.fxo && ok "two compiles give identical bytes" || bad "two compiles give identical bytes"
expect_ok "block.fxo" "$fxc" $nc --device=cpu "$fx/block.pt2" -o block.fxo
expect_ok "block.fxo again" "$fxc" $nc --device=cpu "$fx/block.pt2" -o block2.fxo
cmp -s block.fxo block2.fxo && ok "block: identical bytes" || bad "block: identical bytes"

# Running artifacts reproduces PyTorch.
expect_ok "--run mlp.fxo --expect" "$fxc" --run mlp.fxo --inputs "$fx/mlp.io.safetensors" --expect "$fx/mlp.io.safetensors"
expect_ok "--run block.fxo --expect" "$fxc" --run block.fxo --inputs "$fx/block.io.safetensors" --expect "$fx/block.io.safetensors"
expect_ok "train-mode artifact" "$fxc" $nc --device=cpu --mode=train "$fx/mlp.pt2" -o train.fxo
expect_ok "--run train.fxo --expect gradients" "$fxc" --run train.fxo --inputs "$fx/mlp.io.safetensors" \
  --expect "$fx/mlp.grad.safetensors" --atol 1e-4
expect_ok "eager-backend artifact" "$fxc" $nc --device=cpu --backend=eager "$fx/embed.pt2" -o eager.fxo
expect_ok "--run eager.fxo --expect" "$fxc" --run eager.fxo --inputs "$fx/embed.io.safetensors" --expect "$fx/embed.io.safetensors"
# Same results as compiling and running in one go (seeded random inputs, same seed).
"$fxc" --run mlp.fxo --outputs from_fxo.safetensors >/dev/null 2>&1
"$fxc" --device=cpu --run "$fx/mlp.pt2" --outputs from_pt2.safetensors >/dev/null 2>&1
expect_ok "--run x.fxo equals --run x.pt2 (random inputs)" "$fxc" --run mlp.fxo --expect from_pt2.safetensors --rtol 0 --atol 0
expect_ok "--bench x.fxo" "$fxc" --bench mlp.fxo

# A CUDA artifact (PTX) is built without a device, deterministically; without a device, running
# it is a clean error (test/gpu/e2e/artifact_cuda.sh runs it on a GPU).
expect_ok "--device=cuda artifact without a device" "$fxc" $nc --device=cuda "$fx/block.pt2" -o cuda.fxo
expect_ok "--device=cuda artifact again" "$fxc" $nc --device=cuda "$fx/block.pt2" -o cuda2.fxo
cmp -s cuda.fxo cuda2.fxo && ok "cuda: identical bytes" || bad "cuda: identical bytes"
if out=$("$fxc" --run cuda.fxo --inputs "$fx/block.io.safetensors" --expect "$fx/block.io.safetensors" 2>&1); then
  ok "--run cuda.fxo (a GPU is present)"
elif grep -qF "cuda.fxo: error: no CUDA driver/device" <<<"$out"; then ok "--run cuda.fxo without a GPU: clean error"
else bad "--run cuda.fxo" "$out"; fi

# Corrupt, truncated, foreign and newer files.
cp "$fx/mlp.pt2" foreign.fxo
expect_error "foreign file" 1 "foreign.fxo: error: not an fxc artifact" "$fxc" --run foreign.fxo
head -c 1000 mlp.fxo >truncated.fxo
expect_error "truncated file" 1 "truncated.fxo: error: truncated artifact" "$fxc" --run truncated.fxo
python3 - mlp.fxo <<'EOF'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
c = bytearray(b); c[len(c) // 2] ^= 0x40; open('corrupt.fxo', 'wb').write(c)
v = bytearray(b); v[4] = 2; open('newer.fxo', 'wb').write(v)
EOF
expect_error "corrupt file" 1 "corrupt.fxo: error: corrupt artifact: checksum mismatch" "$fxc" --run corrupt.fxo
expect_error "newer format" 1 "newer.fxo: error: artifact format version 2" "$fxc" --run newer.fxo
expect_error "an artifact is not recompiled by --emit" 2 "is a compiled artifact" "$fxc" --emit=fx mlp.fxo

# Guards: inputs of another batch size fail the shape guard (the .pt2 recompiles instead).
python3 - "$fx/mlp.io.safetensors" <<'EOF'
import json, struct, sys
raw = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
head = json.loads(raw[8:8 + n]); data = raw[8 + n:]
x = head['input_0']; b, f = x['shape']
lo, hi = x['data_offsets']
rows = data[lo:hi][: (b // 2) * f * 4]
h = {'input_0': {'dtype': 'F32', 'shape': [b // 2, f], 'data_offsets': [0, len(rows)]}}
hj = json.dumps(h).encode(); hj += b' ' * (-len(hj) % 8)
open('half.safetensors', 'wb').write(struct.pack('<Q', len(hj)) + hj + rows)
EOF
expect_error "shape guard names the input" 1 "error: input_0 'x': shape guard failed: expected f32[" \
  "$fxc" --run mlp.fxo --inputs half.safetensors
expect_error "--log=recompiles explains an artifact is not recompiled" 1 "not recompiling mlp.fxo" \
  "$fxc" --run mlp.fxo --inputs half.safetensors --log=recompiles
out=$("$fxc" --device=cpu --run "$fx/mlp.pt2" --inputs half.safetensors --log=recompiles 2>&1)
grep -qF "recompiling mlp because the guards failed: input_0 'x': expected f32[" <<<"$out" &&
  ok "a graph recompiles for new shapes (--log=recompiles)" || bad "a graph recompiles for new shapes" "$out"
expect_ok "compile for --inputs' shapes" "$fxc" $nc --device=cpu "$fx/mlp.pt2" --inputs half.safetensors -o half.fxo
expect_ok "--run the re-specialized artifact" "$fxc" --run half.fxo --inputs half.safetensors
out=$("$fxc" --run mlp.fxo --log=guards 2>&1)
grep -qF "input_0 'x': dtype f32, shape f32[" <<<"$out" && grep -qF "(passes)" <<<"$out" &&
  ok "--log=guards lists the artifact's guards" || bad "--log=guards lists the artifact's guards" "$out"

# examples/embed: a C program against libfxcrt.so, which has no LLVM in it.
lib=$build/libfxcrt.so
if [ ! -f "$lib" ]; then
  bad "libfxcrt.so is built next to fxc ($lib)"
else
  if ldd "$lib" | grep -qi llvm; then bad "libfxcrt.so does not link LLVM" "$(ldd "$lib")"
  else ok "libfxcrt.so does not link LLVM"; fi
  syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^fxc_')
  [ -z "$syms" ] && ok "libfxcrt.so exports only fxc_*" || bad "libfxcrt.so exports only fxc_*" "$syms"
  expect_ok "cc builds examples/embed/main.c (C99)" \
    cc -std=c99 -Wall -Wextra -Werror -I"$src/include" -o embed "$src/examples/embed/main.c" \
    -L"$build" -lfxcrt -Wl,-rpath,"$build"
  python3 - "$fx/mlp.io.safetensors" <<'EOF'
import json, struct, sys
raw = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
head = json.loads(raw[8:8 + n]); data = raw[8 + n:]
with open('inputs.bin', 'wb') as f:
    i = 0
    while 'input_%d' % i in head:
        lo, hi = head['input_%d' % i]['data_offsets']; f.write(data[lo:hi]); i += 1
lo, hi = head['output_0']['data_offsets']
vals = struct.unpack('<%df' % ((hi - lo) // 4), data[lo:hi])
open('expected.txt', 'w').write('\n'.join('%.9g' % v for v in vals) + '\n')
EOF
  if ./embed mlp.fxo inputs.bin >embed.out 2>embed.err; then
    python3 - <<'EOF' && ok "embed runs mlp.fxo and matches PyTorch" || bad "embed runs mlp.fxo and matches PyTorch" "$(head -5 embed.out embed.err)"
import sys
lines = open('embed.out').read().split('\n')
assert lines[0].startswith('output_0 f32['), lines[0]
got = [float(x) for x in lines[1:] if x]
want = [float(x) for x in open('expected.txt').read().split()]
assert len(got) == len(want), (len(got), len(want))
worst = max(abs(g - w) - 1e-4 * abs(w) for g, w in zip(got, want))
assert worst <= 1e-4, worst
EOF
  else
    bad "embed runs mlp.fxo" "$(cat embed.err)"
  fi
  expect_error "embed: a foreign file is a clean error" 1 "FXC_ERROR_BAD_ARTIFACT" ./embed foreign.fxo
fi
exit $fail
