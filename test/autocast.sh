#!/usr/bin/env bash
# --dtype=bf16|f16 (passes/autocast.h, docs/autocast.md) end to end:
# - golden: the converted graphs of fixtures (--emit=fx, both exports) against
#   test/golden/autocast_<name>.check with FileCheck (regenerate: test/golden/update_autocast_checks.sh);
# - numerics: mlp, convnet and block (both exports) under --dtype=bf16 on eager and inductor (CPU)
#   reproduce PyTorch's float32 outputs within bf16's tolerance, and miss float32's (so the
#   conversion did happen); train mode reproduces PyTorch's float32 gradients within bf16's;
# - a graph already bf16 is left as it is; --log=frontend reports the casts; an .fxo records
#   --dtype; bad values are usage errors;
# - --device=cuda --emit=ptx --dtype=bf16: the PTX assembles with ptxas.
# FXC_DEVICE=cuda (test/gpu/e2e/autocast_cuda.sh) runs the numerics and train mode on the GPU
# (inductor) and leaves out the rest, which does not depend on the device.
# Usage: autocast.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
filecheck=$(filecheck_path)
dev=${FXC_DEVICE:-cpu}
backends=(eager inductor)
devargs=(--device=cpu)
[ "$dev" = cuda ] && backends=(inductor) && devargs=(--device=cuda --tf32=none)
ptxas=${PTXAS:-}
[ -x "$ptxas" ] || ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)

# --- golden: where the casts go
if [ "$dev" = cuda ]; then :
elif [ -z "$filecheck" ]; then
  missing "autocast golden checks" "FileCheck not found (llvm-19-tools)"
else
  for name in block convnet.core; do
    if "$fxc" --dtype=bf16 --emit=fx -o "$tmp/$name.fx.txt" "$fx/$name.pt2" 2>"$tmp/err"; then
      if "$filecheck" "$src/test/golden/autocast_$name.check" --input-file="$tmp/$name.fx.txt" \
          >"$tmp/fc.out" 2>&1; then ok "golden: $name --dtype=bf16 --emit=fx"
      else bad "golden: $name --dtype=bf16 --emit=fx" "$(cat "$tmp/fc.out")"; fi
    else
      bad "golden: $name: fxc failed" "$(cat "$tmp/err")"
    fi
  done
fi

# --- numerics against PyTorch's float32 outputs. bf16 keeps 8 significant bits (a rounding is
# up to 2^-9 = 0.2% of the value); an output is a sum over a few hundred rounded products, so its
# error is a few 1e-3 of the output's scale. --expect with rtol 2e-2 and an atol of 2e-2 of the
# output's largest magnitude (mlp 1.0, convnet 0.2, block 3.6) holds them; float32's default
# tolerance (1e-4, 1e-5) must not, or nothing was converted.
declare -A atol=([mlp]=2e-2 [convnet]=4e-3 [block]=7e-2)
for name in mlp convnet block; do
  for g in "$fx/$name.pt2" "$fx/$name.core.pt2"; do
    for b in "${backends[@]}"; do
      label="$b $dev $(basename "$g") --dtype=bf16"
      check "$label: within bf16's tolerance" 0 "$fxc" --dtype=bf16 --backend=$b "${devargs[@]}" \
        --run --inputs "$fx/$name.io.safetensors" --expect "$fx/$name.io.safetensors" \
        --rtol=2e-2 --atol=${atol[$name]} "$g"
      # the report names the dtype autocast gives: bf16 for a matmul's output, f32 after an add
      matches "$label: the output's dtype" "$tmp/out" "output_0: ok $([ $name = convnet ] && echo bf16 || echo f32)\["
      check "$label: not within float32's tolerance" 1 "$fxc" --dtype=bf16 --backend=$b \
        "${devargs[@]}" --run --inputs "$fx/$name.io.safetensors" --expect "$fx/$name.io.safetensors" "$g"
      has "$label: the mismatch names --dtype" "$tmp/err" "--dtype=bf16 runs matmuls and convolutions in bf16"
    done
  done
done
# f16: the same pass, 11 significant bits: 4x tighter.
check "inductor $dev mlp.pt2 --dtype=f16" 0 "$fxc" --dtype=f16 "${devargs[@]}" --run \
  --inputs "$fx/mlp.io.safetensors" --expect "$fx/mlp.io.safetensors" --rtol=5e-3 --atol=5e-3 "$fx/mlp.pt2"

# Train mode: the converted graph's forward and backward against PyTorch's float32 gradients.
# Gradients are batch sums of O(1) products whose scale differs per tensor (mlp: input 1.3,
# weights 20-40), so each is held to 2e-2 of its own largest magnitude (bf16 gives 0.2-0.7%), and
# at least one must differ by more than 1e-4 of it (float32 gives 1e-6): the backward ran in bf16.
# (convnet is not here: bf16 rounding flips some of max_pool's choices, which moves whole
# gradient contributions of its input to neighbouring pixels.)
scaled_close() { # scaled_close <label> <actual.safetensors> <expected.safetensors> <tol>
  if python3 - "$2" "$3" "$4" >"$tmp/cmp" 2>&1 <<'PY'; then ok "$1: $(tail -1 "$tmp/cmp")"; else bad "$1" "$(cat "$tmp/cmp")"; fi
import json, struct, sys
def load(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n]); out = {}
    for k, v in h.items():
        if k == '__metadata__': continue
        s, e = v['data_offsets']; raw = b[8 + n + s:8 + n + e]
        if v['dtype'] == 'F32': out[k] = struct.unpack('<%df' % (len(raw) // 4), raw)
        elif v['dtype'] == 'BF16':
            out[k] = struct.unpack('<%df' % (len(raw) // 2), b''.join(b'\0\0' + raw[i:i + 2] for i in range(0, len(raw), 2)))
        else: raise SystemExit('%s: dtype %s' % (k, v['dtype']))
    return out
got, want, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
worst, ok = 0.0, True
for k in sorted(want):
    if not (k.startswith('grad.') or k.startswith('output_')): continue
    if k not in got: print('%s: missing' % k); ok = False; continue
    scale = max(abs(x) for x in want[k]) or 1.0
    err = max(abs(a - e) for a, e in zip(got[k], want[k])) / scale
    worst = max(worst, err)
    print('%s: max error %.3g of its scale %.3g' % (k, err, scale))
    ok &= err <= tol
if worst <= 1e-4: print('every error below 1e-4 of its scale: nothing ran in bf16'); ok = False
print('largest error %.3g of its scale' % worst)
sys.exit(0 if ok else 1)
PY
}
for name in mlp block; do
  for b in aot_eager inductor; do
    [ "$dev" = cuda ] && [ $b != inductor ] && continue
    check "$b $dev train $name.pt2 --dtype=bf16" 0 "$fxc" --dtype=bf16 --backend=$b "${devargs[@]}" \
      --mode=train --run --inputs "$fx/$name.io.safetensors" --outputs "$tmp/$name.$b.grads.safetensors" \
      "$fx/$name.pt2"
    scaled_close "$b $dev train $name.pt2: gradients within 2e-2 of their scale" \
      "$tmp/$name.$b.grads.safetensors" "$fx/$name.grad.safetensors" 2e-2
  done
done

[ "$dev" = cuda ] && exit $fail

# --- what the pass reports and records
check "--log=frontend reports the casts" 0 "$fxc" --dtype=bf16 --log=frontend --emit=fx \
  -o "$tmp/mlp.txt" "$fx/mlp.pt2"
matches "casts counted" "$tmp/err" "\[fxc:frontend\] info: autocast to bf16: [1-9][0-9]* casts inserted \([0-9]+ to bf16, [0-9]+ to f32\)"
check "--dtype=bf16 compiles an artifact" 0 "$fxc" --dtype=bf16 --device=cpu --no-cache \
  -o "$tmp/mlp.fxo" "$fx/mlp.pt2"
check "the artifact runs" 0 "$fxc" -v --run --inputs "$fx/mlp.io.safetensors" \
  --expect "$fx/mlp.io.safetensors" --rtol=2e-2 --atol=2e-2 "$tmp/mlp.fxo"
has "the artifact records --dtype" "$tmp/err" "inference, --dtype=bf16)"
# LLaMA's default export: its rotary embedding casts explicitly, `to(expand(inv_freq), float32)
# @ to(position_ids, float32)`; the cast of matmul's operands must not be undone by replaying
# that `to` over a cast base (it names a dtype). Its attention stays whole for cuDNN.
check "llama2l (default export) converts to bf16" 0 "$fxc" --dtype=bf16 --emit=fx \
  -o "$tmp/llama.txt" "$src/test/zoo/llama2l.pt2"
matches "llama2l: the rotary matmul's operands are cast together" "$tmp/llama.txt" \
  'matmul: "bf16\[1, 32, 128\]" = aten.matmul.default'
check "llama2l --dtype=bf16 --device=cuda: two fused attention calls" 0 "$fxc" --dtype=bf16 \
  --device=cuda --emit=ptx --log=inductor -o "$tmp/llama.ptx" "$src/test/zoo/llama2l.pt2"
has "llama2l: attention calls counted" "$tmp/err" "(15 matmul, 0 convolution, 2 attention, 0 fallback)"
# A graph already bf16 is left as it is.
"$fxc" --emit=fx -o "$tmp/bf16.txt" "$src/test/graphs/norms_bf16.fxg" 2>/dev/null
check "--dtype=bf16 on a bf16 graph" 0 "$fxc" --dtype=bf16 --log=frontend --emit=fx \
  -o "$tmp/bf16.dtype.txt" "$src/test/graphs/norms_bf16.fxg"
same "a bf16 graph is left as it is" "$tmp/bf16.txt" "$tmp/bf16.dtype.txt"
has "a bf16 graph: said so" "$tmp/err" "autocast to bf16: not a float32 graph, left as it is"
# Bad values.
for v in int8 f32 bfloat16; do
  check "--dtype='$v' is a usage error" 2 "$fxc" --dtype="$v" --emit=fx "$fx/mlp.pt2"
  matches "--dtype='$v': names the flag and the values" "$tmp/err" "invalid value '$v' for '--dtype'.*; valid values: bf16, f16"
done

# --- PTX for CUDA, without a GPU: the bf16 graphs' kernels assemble.
if [ ! -x "$ptxas" ]; then
  missing "autocast PTX" "ptxas not found (CUDA Toolkit at /usr/local/cuda)"
else
  for run in block.pt2:inference convnet.core.pt2:inference mlp.pt2:inference convnet.pt2:train; do
    g=${run%:*} mode=${run#*:}
    d=$tmp/ptx-${g%.pt2}-$mode
    if "$fxc" --device=cuda --emit=ptx --dtype=bf16 --mode=$mode --debug-dir="$d" -o "$d.ptx" \
        "$fx/$g" >"$tmp/out" 2>&1; then
      n=0
      for p in "$d.ptx" $(find "$d" -name '*.ptx' | sort); do
        n=$((n + 1))
        "$ptxas" -arch=sm_90 "$p" -o "$tmp/k.cubin" >"$tmp/err" 2>&1 ||
          bad "ptx $g $mode: ptxas $(basename "$p")" "$(head -5 "$tmp/err")"
      done
      grep -q 'bf16\|b16' "$d.ptx" && ok "ptx $g $mode: $n modules assemble, bf16 loads" ||
        bad "ptx $g $mode: no 16-bit access in the PTX"
    else
      bad "ptx $g $mode: fxc" "$(head -5 "$tmp/out")"
    fi
  done
fi
exit $fail
