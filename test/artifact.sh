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
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"

cd "$tmp" || exit 1
# No compile cache: two compiles must each really compile for the determinism checks.
export FXC_CACHE_DIR= XDG_CACHE_HOME=$tmp/xdg-unused
nc=--no-cache
# The default action, and determinism: two compiles give the same bytes.
check "default action writes mlp.fxo" 0 "$fxc" $nc --device=cpu "$fx/mlp.pt2"
[ -s mlp.fxo ] && ok "mlp.fxo exists" || bad "mlp.fxo exists"
check "compile again with -o" 0 "$fxc" $nc --device=cpu "$fx/mlp.pt2" -o again.fxo
same "two compiles give identical bytes" mlp.fxo again.fxo
check "block.fxo" 0 "$fxc" $nc --device=cpu "$fx/block.pt2" -o block.fxo
check "block.fxo again" 0 "$fxc" $nc --device=cpu "$fx/block.pt2" -o block2.fxo
same "block: identical bytes" block.fxo block2.fxo

# Running artifacts reproduces PyTorch.
check "--run mlp.fxo --expect" 0 "$fxc" --run mlp.fxo --inputs "$fx/mlp.io.safetensors" --expect "$fx/mlp.io.safetensors"
check "--run block.fxo --expect" 0 "$fxc" --run block.fxo --inputs "$fx/block.io.safetensors" --expect "$fx/block.io.safetensors"
check "train-mode artifact" 0 "$fxc" $nc --device=cpu --mode=train "$fx/mlp.pt2" -o train.fxo
check "--run train.fxo --expect gradients" 0 "$fxc" --run train.fxo --inputs "$fx/mlp.io.safetensors" \
  --expect "$fx/mlp.grad.safetensors" --atol 1e-4
check "eager-backend artifact" 0 "$fxc" $nc --device=cpu --backend=eager "$fx/embed.pt2" -o eager.fxo
check "--run eager.fxo --expect" 0 "$fxc" --run eager.fxo --inputs "$fx/embed.io.safetensors" --expect "$fx/embed.io.safetensors"
# Same results as compiling and running in one go (seeded random inputs, same seed).
"$fxc" --run mlp.fxo --outputs from_fxo.safetensors >/dev/null 2>&1
"$fxc" --device=cpu --run "$fx/mlp.pt2" --outputs from_pt2.safetensors >/dev/null 2>&1
check "--run x.fxo equals --run x.pt2 (random inputs)" 0 "$fxc" --run mlp.fxo --expect from_pt2.safetensors --rtol 0 --atol 0
check "--bench x.fxo" 0 "$fxc" --bench mlp.fxo
has "--bench x.fxo reports the load time" "$tmp/out" "mlp.fxo: inductor: load "

# Several models in one artifact (fxc --link), each run by name (--model); the first by default.
check "--link two artifacts" 0 "$fxc" --link -o both.fxo mlp.fxo block.fxo
check "--link again" 0 "$fxc" --link -o both2.fxo mlp.fxo block.fxo
same "--link: identical bytes" both.fxo both2.fxo
check "--run both.fxo runs its first model" 0 "$fxc" --run both.fxo --inputs "$fx/mlp.io.safetensors" --expect "$fx/mlp.io.safetensors"
check "--run both.fxo --model=block" 0 "$fxc" --run both.fxo --model=block --inputs "$fx/block.io.safetensors" --expect "$fx/block.io.safetensors"
check "-v names the models and the one run" 0 "$fxc" -v --run both.fxo --model=block --inputs "$fx/block.io.safetensors"
has "-v names the models and the one run: message" "$tmp/err" "fxc: both.fxo holds 2 models (mlp, block); running 'block'"
check "--model names no model" 1 "$fxc" --run both.fxo --model=decoder
has "--model names no model: message" "$tmp/err" "both.fxo: error: no model 'decoder' in this artifact (it holds 'mlp', 'block')"
check "NAME=FILE renames; a linked artifact's models are linked again" 0 "$fxc" --link -o three.fxo both.fxo twin=mlp.fxo
check "--run three.fxo --model=twin" 0 "$fxc" --run three.fxo --model=twin --inputs "$fx/mlp.io.safetensors" --expect "$fx/mlp.io.safetensors"
python3 - mlp.fxo both.fxo three.fxo <<'EOF' && ok "models' equal weights are stored once" || bad "models' equal weights are stored once"
import struct, sys
size = lambda p: struct.unpack('<Q', open(p, 'rb').read()[48:56])[0]
mlp, both, three = (size(p) for p in sys.argv[1:])
assert both > mlp and three == both, (mlp, both, three)  # the twin adds no weight bytes
EOF
check "two models of one name" 1 "$fxc" --link -o dup.fxo mlp.fxo again.fxo
has "two models of one name: message" "$tmp/err" "again.fxo: error: a second model named 'mlp' (mlp.fxo has one): rename one with NAME=again.fxo"
check "--link of a graph" 1 "$fxc" --link -o g.fxo "$fx/mlp.pt2"
has "--link of a graph: message" "$tmp/err" "mlp.pt2: error: --link combines compiled artifacts; compile this graph first"
check "--link without -o" 2 "$fxc" --link mlp.fxo block.fxo
has "--link without -o: message" "$tmp/err" "--link needs -o <file>"
check "--link with --run" 2 "$fxc" --link --run -o x.fxo mlp.fxo
check "two graphs without --link" 2 "$fxc" "$fx/mlp.pt2" "$fx/block.pt2"
has "two graphs without --link: message" "$tmp/err" "fxc compiles one graph per invocation"
check "--model with a graph warns" 0 "$fxc" --device=cpu --emit=fx --model=block "$fx/mlp.pt2" -o /dev/null
has "--model with a graph warns: message" "$tmp/err" "argument unused with a graph (it chooses a model of an .fxo artifact): '--model=block'"

# The weight section: raw, page-aligned, deduplicated by content. tools/make_big_fxg.py writes
# 6 layers whose last two repeat the first two's bytes under other names: 4 distinct weights.
python3 "$src/tools/make_big_fxg.py" "$tmp/dedup" 6 64 256 >/dev/null
check "a model with repeated weights compiles" 0 "$fxc" $nc --device=cpu dedup.fxg -o dedup.fxo
"$fxc" --device=cpu --run dedup.fxg --outputs dedup_fxg.safetensors >/dev/null 2>&1
check "... and runs with its graph's results" 0 "$fxc" --run dedup.fxo --expect dedup_fxg.safetensors --rtol 0 --atol 0
python3 - dedup.fxo <<'EOF' && ok "weights stored raw, page-aligned, once per content" || bad "weights stored raw, page-aligned, once per content"
import struct, sys
b = open(sys.argv[1], 'rb').read()
woff, wsize = struct.unpack('<QQ', b[40:56])
assert woff % 4096 == 0 and woff + wsize == len(b), (woff, wsize, len(b))
st = open('dedup.safetensors', 'rb').read()
n = struct.unpack('<Q', st[:8])[0]
data = st[8 + n:]
layer = 64 * 256 * 4  # each layer's weight, f32
assert wsize < 5 * layer, wsize  # 4 distinct weights (each page-aligned), not 6
for i in range(4):  # each distinct weight's bytes lie raw at a page boundary of the section
    w = data[i * layer:(i + 1) * layer]
    at = b.find(w, woff)
    assert at >= 0 and (at - woff) % 4096 == 0, (i, at)
EOF

# A CUDA artifact (PTX) is built without a device, deterministically; without a device, running
# it is a clean error (test/gpu/e2e/artifact_cuda.sh runs it on a GPU).
check "--device=cuda artifact without a device" 0 "$fxc" $nc --device=cuda "$fx/block.pt2" -o cuda.fxo
check "--device=cuda artifact again" 0 "$fxc" $nc --device=cuda "$fx/block.pt2" -o cuda2.fxo
same "cuda: identical bytes" cuda.fxo cuda2.fxo
if out=$("$fxc" --run cuda.fxo --inputs "$fx/block.io.safetensors" --expect "$fx/block.io.safetensors" 2>&1); then
  ok "--run cuda.fxo (a GPU is present)"
elif grep -qF "cuda.fxo: error: no CUDA driver/device" <<<"$out"; then ok "--run cuda.fxo without a GPU: clean error"
else bad "--run cuda.fxo" "$out"; fi

# The kernels' code (format 3 on): a CUDA graph's kernels in one PTX module; a CPU graph of more
# than 32 kernels in several objects (compiled in parallel), loaded and run to the graph's results.
cat >code.py <<'PY'
import json, struct, subprocess, sys
b = open(sys.argv[1], 'rb').read()
csize, = struct.unpack('<Q', b[24:32])
p = subprocess.run(['zstd', '-dc'], input=b[64:64 + csize], capture_output=True, check=True).stdout
mlen, = struct.unpack('<Q', p[:8])
m = json.loads(p[8:8 + mlen]); blobs = p[8 + mlen:]
for g in m['models'][0]['graphs']:
    names = [k['name'] for k in g['plan']['kernels']]
    if g['ptx'] is not None:
        o, n = g['ptx']; ptx = blobs[o:o + n].decode()
        entries = [l.split('.entry ')[1].split('(')[0] for l in ptx.splitlines() if '.entry ' in l]
        print('ptx', ptx.count('.version '), sorted(entries) == sorted(names))
    else:
        objs = [blobs[o:o + n] for o, n in g['objects']]
        named = all(any(n.encode() + b'\0' in o for o in objs) for n in names)
        print('objects', len(objs), len(names), all(o[:4] == b'\x7fELF' for o in objs), named)
PY
if command -v zstd >/dev/null; then
  check "CUDA artifact" 0 "$fxc" $nc --device=cuda "$fx/mlp.pt2" -o cuda.fxo
  python3 code.py cuda.fxo >code.txt 2>&1
  has "CUDA artifact: one PTX module holding every kernel" code.txt "ptx 1 True"
  python3 "$src/bench/make_models.py" --size small --only resnet50 -o . >/dev/null
  check "CPU artifact of a ResNet-50" 0 "$fxc" $nc --device=cpu resnet50.fxg -o r50.fxo
  python3 code.py r50.fxo >code.txt 2>&1
  # Kernels that differ only in name (the repeated blocks') are compiled once, as aliases. With
  # oneDNN the convolutions take their batch norms, ReLUs and residuals as post-ops (7 kernels
  # left); without it they are im2col + BLAS with generated epilogues (33+).
  if grep -Eq '^objects [1-4] ([5-9]|[1-9][0-9]|1[0-9][0-9]) True True$' code.txt; then
    ok "CPU artifact: its kernels in 1 to 4 objects, each name defined"
  else
    bad "CPU artifact: its kernels in 1 to 4 objects, each name defined ($(cat code.txt))"
  fi
  "$fxc" --device=cpu --run resnet50.fxg --outputs r50_fxg.safetensors >/dev/null 2>&1
  check "... loaded from its objects, runs to the graph's results" 0 "$fxc" --run r50.fxo --expect r50_fxg.safetensors --rtol 0 --atol 0
fi

# Corrupt, truncated, foreign and newer files.
cp "$fx/mlp.pt2" foreign.fxo
check "foreign file" 1 "$fxc" --run foreign.fxo
has "foreign file: message" "$tmp/err" "foreign.fxo: error: not an fxc artifact"
head -c 1000 mlp.fxo >truncated.fxo
check "truncated file" 1 "$fxc" --run truncated.fxo
has "truncated file: message" "$tmp/err" "truncated.fxo: error: truncated artifact"
python3 - mlp.fxo <<'EOF'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
c = bytearray(b); c[100] ^= 0x40; open('corrupt.fxo', 'wb').write(c)
w = bytearray(b); w[-5] ^= 0x40; open('corrupt_weights.fxo', 'wb').write(w)
v = bytearray(b); v[4] = 5; open('newer.fxo', 'wb').write(v)
EOF
check "corrupt file" 1 "$fxc" --run corrupt.fxo
has "corrupt file: message" "$tmp/err" "corrupt.fxo: error: corrupt artifact: checksum mismatch"
check "corrupt weights" 1 "$fxc" --run corrupt_weights.fxo
has "corrupt weights: message" "$tmp/err" "corrupt_weights.fxo: error: corrupt artifact: checksum mismatch in the weights"
check "newer format" 1 "$fxc" --run newer.fxo
has "newer format: message" "$tmp/err" "newer.fxo: error: artifact format version 5"
check "an artifact is not recompiled by --emit" 2 "$fxc" --emit=fx mlp.fxo
has "an artifact is not recompiled by --emit: message" "$tmp/err" "is a compiled artifact"

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
check "shape guard names the input" 1 "$fxc" --run mlp.fxo --inputs half.safetensors
has "shape guard names the input: message" "$tmp/err" \
  "error: input_0 'x': shape guard failed: expected f32["
check "--log=recompiles explains an artifact is not recompiled" 1 \
  "$fxc" --run mlp.fxo --inputs half.safetensors --log=recompiles
has "--log=recompiles explains an artifact is not recompiled: message" "$tmp/err" \
  "not recompiling mlp.fxo"
"$fxc" --device=cpu --run "$fx/mlp.pt2" --inputs half.safetensors --log=recompiles >"$tmp/out" 2>&1
has "a graph recompiles for new shapes (--log=recompiles)" "$tmp/out" \
  "recompiling mlp because the guards failed: input_0 'x': expected f32["
check "compile for --inputs' shapes" 0 "$fxc" $nc --device=cpu "$fx/mlp.pt2" --inputs half.safetensors -o half.fxo
check "--run the re-specialized artifact" 0 "$fxc" --run half.fxo --inputs half.safetensors
"$fxc" --run mlp.fxo --log=guards >"$tmp/out" 2>&1
has "--log=guards lists the artifact's guards" "$tmp/out" "input_0 'x': dtype f32, shape f32["
has "--log=guards says they pass" "$tmp/out" "(passes)"
# A wrong dtype or rank is the artifact's guard failure, not a fault of the inputs file.
python3 - "$fx/mlp.io.safetensors" <<'EOF'
import json, struct, sys
raw = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
head = json.loads(raw[8:8 + n]); data = raw[8 + n:]
x = head['input_0']; lo, hi = x['data_offsets']
vals = struct.unpack('<%df' % ((hi - lo) // 4), data[lo:hi])
def write(path, dtype, shape, payload):
    h = json.dumps({'input_0': {'dtype': dtype, 'shape': shape, 'data_offsets': [0, len(payload)]}}).encode()
    h += b' ' * (-len(h) % 8)
    open(path, 'wb').write(struct.pack('<Q', len(h)) + h + payload)
write('x64.safetensors', 'F64', x['shape'], struct.pack('<%dd' % len(vals), *vals))
write('rank3.safetensors', 'F32', x['shape'] + [1], data[lo:hi])
EOF
check "a wrong dtype fails the dtype guard" 1 "$fxc" --run mlp.fxo --inputs x64.safetensors
has "a wrong dtype fails the dtype guard: message" "$tmp/err" \
  "mlp.fxo: error: input_0 'x': dtype guard failed: expected f32, got f64"
hasnt "a wrong dtype is not blamed on the inputs file" "$tmp/err" "x64.safetensors: error"
check "a wrong rank fails the shape guard" 1 "$fxc" --run mlp.fxo --inputs rank3.safetensors
has "a wrong rank fails the shape guard: message" "$tmp/err" \
  "mlp.fxo: error: input_0 'x': shape guard failed: expected f32[64, 256], got f32[64, 256, 1]"
hasnt "a wrong rank is not blamed on the inputs file" "$tmp/err" "rank3.safetensors: error"
"$fxc" --run mlp.fxo --inputs x64.safetensors --log=guards >"$tmp/out" 2>&1
has "--log=guards marks the failing guard" "$tmp/out" "input_0 'x': dtype f32, shape f32[64, 256], strides [256, 1], device cpu (FAILS)"

# examples/embed: a C program against libfxcrt.so, which has no LLVM in it.
lib=$build/libfxcrt.so
if [ ! -f "$lib" ]; then
  bad "libfxcrt.so is built next to fxc ($lib)"
else
  if ldd "$lib" | grep -qi llvm; then bad "libfxcrt.so does not link LLVM" "$(ldd "$lib")"
  else ok "libfxcrt.so does not link LLVM"; fi
  syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^fxc_')
  [ -z "$syms" ] && ok "libfxcrt.so exports only fxc_*" || bad "libfxcrt.so exports only fxc_*" "$syms"
  check "cc builds examples/embed/main.c (C99)" 0 \
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
  check "embed: a foreign file is a clean error" 1 ./embed foreign.fxo
  has "embed: a foreign file is a clean error: message" "$tmp/err" "FXC_ERROR_BAD_ARTIFACT"
  # examples/embed_cpp: the header-only C++ wrapper; one model loaded from memory, run from 8
  # threads x 200 runs, every result compared; then the same while its weights are swapped.
  check "c++ builds examples/embed_cpp/main.cpp" 0 \
    c++ -std=c++17 -Wall -Wextra -Werror -pthread -I"$src/include" -o embed_cpp \
    "$src/examples/embed_cpp/main.cpp" -L"$build" -lfxcrt -Wl,-rpath,"$build"
  check "embed_cpp: 8 threads x 200 runs of block.fxo" 0 ./embed_cpp block.fxo 8 200
  has "embed_cpp: 8 threads x 200 runs: all equal" "$tmp/out" "ok: 8 threads x 200 runs"
  python3 "$src/tools/make_big_fxg.py" "$tmp/swap" 4 64 128 >/dev/null
  check "swap.fxo" 0 "$fxc" $nc --device=cpu swap.fxg -o swap.fxo
  python3 - <<'EOF'
# new.safetensors: swap.safetensors' weights halved; wrong.safetensors: l0.weight renamed l9.
import array, struct
st = open('swap.safetensors', 'rb').read(); n = struct.unpack('<Q', st[:8])[0]
data = array.array('f', st[8 + n:])
data = array.array('f', (v * 0.5 for v in data))  # exact in f32: an exponent decrement
open('new.safetensors', 'wb').write(st[:8 + n] + data.tobytes())
open('wrong.safetensors', 'wb').write(st[:8 + n].replace(b'"l0.weight"', b'"l9.weight"') + st[8 + n:])
EOF
  check "embed_cpp: weights swapped while 8 threads run" 0 ./embed_cpp swap.fxo 8 200 new.safetensors
  has "embed_cpp: swapped runs see the old or the new weights" "$tmp/out" "ok: 8 threads x 200 runs"
  check "embed_cpp: a weight of another name is refused" 1 ./embed_cpp swap.fxo 1 1 wrong.safetensors
  has "embed_cpp: the refusal names the weight" "$tmp/err" "weight 'l9.weight': the artifact has no such swappable weight"
fi
exit $fail
