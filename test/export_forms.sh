#!/usr/bin/env bash
# The forms of a torch.export program beyond tensors in, tensors out (test/fixtures/forms,
# tools/export_forms.py): constant inputs, None and number outputs, buffer mutations, lifted
# constants, keyword-only and mutated inputs. Each archive, default and core, on three backends,
# against PyTorch's outputs.
# Usage: export_forms.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures/forms
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
export FXC_CACHE_DIR=$tmp/cache

for name in constargs noneout bntrain consts kwonly inplace dropout_train; do
  io=$fx/$name.io.safetensors
  for g in "$fx/$name.pt2" "$fx/$name.core.pt2"; do
    for b in eager aot_eager_decomp_partition inductor; do
      if out=$("$fxc" --backend=$b --run --inputs "$io" --expect "$io" "$g" 2>&1); then
        ok "$b $(basename "$g")"
      else bad "$b $(basename "$g")" "$out"; fi
    done
  done
done

# torch.cond: both branches read, the result selected by the predicate; each archive at its
# inputs and at the inputs negated (the other branch), and a dynamic batch at another size.
# The predicate is a tensor (x.sum() > 0) or a size (cond_shape: x.shape[0] > 4).
for name in cond cond_multi cond_nested cond_dyn cond_shape; do
  for io in "$fx/$name.io.safetensors" "$fx/$name.neg.io.safetensors" "$fx/$name.b6.io.safetensors"; do
    # Only the dynamic archives have a second size.
    [[ $io == *.b6.* && $name != cond_dyn && $name != cond_shape ]] && continue
    [ -e "$io" ] || { bad "$(basename "$io") is missing"; continue; }
    for g in "$fx/$name.pt2" "$fx/$name.core.pt2"; do
      for b in eager inductor; do
        if out=$("$fxc" --backend=$b --run --inputs "$io" --expect "$io" "$g" 2>&1); then
          ok "$b $(basename "$g") $(basename "$io")"
        else bad "$b $(basename "$g") $(basename "$io")" "$out"; fi
      done
    done
  done
done
# Train mode through a cond: PyTorch's gradients (the branch not taken gets none).
if out=$("$fxc" --mode=train --backend=inductor --run --inputs "$fx/cond_multi.io.safetensors" \
  --expect "$fx/cond_multi.grad.safetensors" --rtol 2e-3 --atol 1e-4 "$fx/cond_multi.pt2" 2>&1); then
  ok "train through torch.cond matches PyTorch's gradients"
else bad "train through torch.cond" "$out"; fi
"$fxc" --emit=fx "$fx/cond_shape.pt2" >"$tmp/cs.txt" 2>&1
has "a size predicate is computed from the bound symbol" "$tmp/cs.txt" "aten.gt.Tensor(cond_size, cond_size_1)"
has "the selected result keeps the symbolic batch" "$tmp/cs.txt" 'cond: "f32[s77, 8]"'

# A number output is a 0-dim tensor: constargs returns (relu(x * 0.5 + 2), None, 4).
"$fxc" "$fx/constargs.pt2" --run --inputs "$fx/constargs.io.safetensors" \
  --outputs "$tmp/o.safetensors" >/dev/null 2>&1
python3 - "$tmp/o.safetensors" >"$tmp/o.txt" <<'PY'
import json, struct, sys
d = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", d[:8])[0]
h = json.loads(d[8:8 + n])
o = h["output_1"]
a, b = o["data_offsets"]
print(sorted(k for k in h if k != "__metadata__"), o["dtype"], o["shape"],
      struct.unpack("<q", d[8 + n + a:8 + n + b])[0])
PY
has "the int output is an int64 scalar; None is no output" "$tmp/o.txt" \
  "['output_0', 'output_1'] I64 [] 4"
# Train mode with a train-mode BatchNorm: the gradient of the sum of the outputs. The running
# statistics the core export returns as buffer mutations are no result: no gradient of them
# (the conv bias, which batch statistics cancel, gets none), default and core exports agree.
for g in bntrain bntrain.core; do
  "$fxc" --mode=train --run --inputs "$fx/bntrain.io.safetensors" --outputs "$tmp/$g.grad.safetensors" \
    "$fx/$g.pt2" >/dev/null 2>"$tmp/err" || bad "train $g.pt2" "$(cat "$tmp/err")"
done
python3 - "$tmp/bntrain.grad.safetensors" "$tmp/bntrain.core.grad.safetensors" >"$tmp/g.txt" <<'PY'
import array, json, struct, sys
def load(p):
    d = open(p, "rb").read()
    n = struct.unpack("<Q", d[:8])[0]
    h = json.loads(d[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__" or v["dtype"] != "F32": continue
        a, b = v["data_offsets"]
        out[k] = array.array("f", d[8 + n + a:8 + n + b])
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
grads = sorted(k for k in a if k.startswith("grad."))
print("bias", max(abs(x) for x in a["grad.c.bias"]) < 1e-5, max(abs(x) for x in b["grad.c.bias"]) < 1e-5)
print("agree", grads == sorted(k for k in b if k.startswith("grad.")) and
      all(max(abs(x - y) for x, y in zip(a[k], b[k])) < 1e-5 for k in grads))
PY
has "train-mode batch norm: no gradient reaches the conv bias" "$tmp/g.txt" "bias True True"
has "train-mode batch norm: default and core exports agree" "$tmp/g.txt" "agree True"
exit $fail
