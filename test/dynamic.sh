#!/usr/bin/env bash
# Dynamic shapes end to end (test/fixtures/dynamic: archives exported by torch 2.11 with
# Dim("batch") and Dim("seq"), PyTorch's outputs at three sizes each):
#   - every backend compiles at the sizes of --inputs and reproduces PyTorch at each size;
#   - train mode (mlp, block) reproduces PyTorch's gradients at two sizes;
#   - one .fxo, compiled once, runs at every size in range: at the compiled size its plan; at the
#     others, for one symbol whose plans hold at every size (mlp, convnet), the same kernels with
#     that size's numbers, else the reference interpreter; outside the range the guard names dim
#     and range;
#   - the readable graph shows the symbols; --emit=fxg keeps them; --log=guards lists them.
# Usage: dynamic.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
dx=$src/test/fixtures/dynamic
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
export FXC_CACHE_DIR=$tmp/cache

run() { # run <label> <args...>: exit 0 expected
  local label=$1; shift
  if out=$("$fxc" "$@" 2>&1); then ok "$label"; else bad "$label: fxc $*" "$out"; fi
}
sizes() { ls "$dx/$1".*.io.safetensors | sed "s|.*/$1\.||; s|\.io\.safetensors||"; }

# The probes of tools/export_dynamic_probe.py: sizes through floor division, modulo and a float
# scale factor (TruncToInt(1.5*ToFloat(s0))), views at symbolic offsets, derived dims (2*Dim),
# two inputs with dims of their own, symbolic factory sizes, arange/masks over the length.
probes="upsample halfsplit padto8 causal factory derived conv1d symscalar gather embedding"
# transformers' T5 (encoder-decoder, two inputs with a sequence each; attention masks made from
# a parameter), GPT-2 and LLaMA (its rotary embedding is a torch.no_grad() region, a
# wrap_with_set_grad_enabled node), default exports only.
for name in mlp convnet block embed berttiny $probes t5_tiny gpt2_tiny llama_tiny; do
  for g in "$dx/$name.pt2" "$dx/$name.core.pt2"; do
    [ -f "$g" ] || continue
    base=$(basename "$g")
    for b in eager aot_eager_decomp_partition inductor; do
      for s in $(sizes "$name"); do
        io=$dx/$name.$s.io.safetensors
        if out=$("$fxc" --backend=$b --run --inputs "$io" --expect "$io" "$g" 2>&1); then
          ok "$b $base at $s"
        else bad "$b $base at $s" "$out"; fi
      done
    done
  done
done

# Training at two sizes: gradients of the sum of the outputs, as PyTorch computed them.
for name in mlp block; do
  for grad in "$dx/$name".*.grad.safetensors; do
    s=$(basename "$grad" .grad.safetensors); s=${s#$name.}
    for b in aot_eager inductor; do
      if out=$("$fxc" --backend=$b --mode=train --run --inputs "$dx/$name.$s.io.safetensors" \
        --expect "$grad" --atol 1e-4 "$dx/$name.pt2" 2>&1); then
        ok "$b train $name.pt2 at $s"
      else bad "$b train $name.pt2 at $s" "$out"; fi
    done
  done
done

# One artifact, compiled once (at the hints), runs at every size in range.
for name in mlp block berttiny $probes; do
  check "compile $name.core.pt2 to one .fxo" 0 "$fxc" "$dx/$name.core.pt2" -o "$tmp/$name.fxo"
  for s in $(sizes "$name"); do
    io=$dx/$name.$s.io.safetensors
    check "$name.fxo runs at $s" 0 "$fxc" "$tmp/$name.fxo" --run --inputs "$io" --expect "$io"
  done
done
# Size-generic plans: one symbol whose kernels are the same at every batch size.
for name in mlp convnet; do
  check "compile $name.pt2 to one .fxo, --log=guards" 0 "$fxc" --no-cache --log=guards \
    "$dx/$name.pt2" -o "$tmp/$name.g.fxo"
  has "$name: the plans hold at every size" "$tmp/err" "the plans hold at every size, s77 in"
  for s in $(sizes "$name"); do
    io=$dx/$name.$s.io.safetensors
    check "$name.g.fxo runs its plans at $s" 0 "$fxc" "$tmp/$name.g.fxo" --run --inputs "$io" \
      --expect "$io" --log=guards
  done
  s=$(sizes "$name" | head -1) # b1: not the size compiled at
  check "$name.g.fxo at $s, --log=guards" 0 "$fxc" "$tmp/$name.g.fxo" --run --log=guards \
    --inputs "$dx/$name.$s.io.safetensors"
  has "$name.g.fxo: $s runs the plans made for every size" "$tmp/err" \
    "bind s77=1: the plans made for every size"
done
check "compile mlp.pt2 again" 0 "$fxc" --no-cache "$dx/mlp.pt2" -o "$tmp/mlp.g2.fxo"
same "a size-generic .fxo is byte-identical across compiles" "$tmp/mlp.g.fxo" "$tmp/mlp.g2.fxo"
check "block.core.pt2 (two symbols), --log=guards" 0 "$fxc" --no-cache --log=guards \
  "$dx/block.core.pt2" -o "$tmp/block.g.fxo"
has "block: other sizes on the interpreter, and why" "$tmp/err" \
  "only (size-generic plans take one symbol); other sizes run on the reference interpreter"
check "block.g.fxo at b1t5, --log=guards" 0 "$fxc" "$tmp/block.g.fxo" --run --log=guards \
  --inputs "$dx/block.b1t5.io.safetensors" --expect "$dx/block.b1t5.io.safetensors"
has "block.g.fxo: b1t5 runs on the interpreter" "$tmp/err" ": the reference interpreter (the plans"
if [ -f "$dx/symscalar.pt2" ]; then
  check "symscalar.pt2 (its kernels use the size), --log=guards" 0 "$fxc" --no-cache \
    --log=guards "$dx/symscalar.pt2" -o "$tmp/symscalar.g.fxo"
  has "symscalar: the kernels' code differs between sizes" "$tmp/err" \
    "the kernels' code differs between sizes"
fi
"$fxc" "$tmp/mlp.fxo" --run --inputs "$dx/mlp.b3.io.safetensors" --outputs "$tmp/o3.safetensors" 2>/dev/null
"$fxc" "$tmp/mlp.fxo" --run --inputs "$dx/mlp.b200.io.safetensors" --outputs "$tmp/o200.safetensors" 2>/dev/null
"$fxc" "$tmp/mlp.fxo" --run --inputs "$dx/mlp.b3.io.safetensors" --outputs "$tmp/o3b.safetensors" 2>/dev/null
same "a dynamic .fxo gives the same bytes for the same inputs after another size" "$tmp/o3.safetensors" "$tmp/o3b.safetensors"

# Out of range: a guard error naming the input, the dim and the range (exit 1).
python3 - "$tmp" <<'EOF'
import json, struct, sys
def save(path, name, dtype, shape):
    n = 1
    for d in shape: n *= d
    size = {"F32": 4, "I64": 8}[dtype]
    hdr = json.dumps({name: {"dtype": dtype, "shape": shape, "data_offsets": [0, n * size]}}).encode()
    hdr += b" " * (-len(hdr) % 8)
    open(path, "wb").write(struct.pack("<Q", len(hdr)) + hdr + bytes(n * size))
save(sys.argv[1] + "/mlp5000.safetensors", "input_0", "F32", [5000, 256])
save(sys.argv[1] + "/mlp0.safetensors", "input_0", "F32", [0, 256])
save(sys.argv[1] + "/mlp_wide.safetensors", "input_0", "F32", [4, 255])
save(sys.argv[1] + "/block_t1.safetensors", "input_0", "F32", [2, 1, 128])
EOF
check "mlp.fxo at batch 5000 fails its guard" 1 "$fxc" "$tmp/mlp.fxo" --run --inputs "$tmp/mlp5000.safetensors"
has "the guard names the dim and the range" "$tmp/err" "input_0 'x': dim 0 is 5000, outside s77 in [1, 4096]"
check "mlp.fxo at batch 0 fails its guard (torch.export's range starts at 1)" 1 "$fxc" "$tmp/mlp.fxo" --run --inputs "$tmp/mlp0.safetensors"
has "batch 0 is outside the range" "$tmp/err" "dim 0 is 0, outside s77 in [1, 4096]"
check "a static dim keeps its size" 1 "$fxc" "$tmp/mlp.fxo" --run --inputs "$tmp/mlp_wide.safetensors"
has "the static dim's guard" "$tmp/err" "input_0 'x': dim 1 is 255, expected 256"
check "block.fxo at sequence 1 fails its guard (Dim min 2)" 1 "$fxc" "$tmp/block.fxo" --run --inputs "$tmp/block_t1.safetensors"
has "the sequence guard" "$tmp/err" "input_0 'x': dim 1 is 1, outside s27 in [2, 128]"
check "compiling block.pt2 for an out-of-range size fails" 1 "$fxc" --run --inputs "$tmp/block_t1.safetensors" "$dx/block.pt2"
has "the compile names the guard" "$tmp/err" "the inputs are outside the graph's dynamic shapes: input_0 'x': dim 1 is 1, outside s27 in [2, 128]"

# The readable graph and the .fxg keep the symbols; the guards log lists them.
check "--emit=fx of a dynamic archive" 0 "$fxc" --emit=fx -o "$tmp/block.txt" "$dx/block.core.pt2"
has "inputs print their symbols" "$tmp/block.txt" "f32[s77, s27, 128]"
has "views print their symbolic sizes" "$tmp/block.txt" "[s27*s77, 128]"
check "--emit=fxg of a dynamic archive" 0 "$fxc" --emit=fxg -o "$tmp/block.fxg" "$dx/block.core.pt2"
has "the .fxg declares the symbols" "$tmp/block.fxg" '"symbols": {"s27": {"min": 2, "max": 128, "hint": 16}, "s77": {"min": 1, "max": 64, "hint": 2}}'
check "the .fxg runs at another size" 0 "$fxc" --run --inputs "$dx/block.b3t40.io.safetensors" --expect "$dx/block.b3t40.io.safetensors" "$tmp/block.fxg"
check "--log=guards" 0 "$fxc" --log=guards --run --inputs "$dx/block.b1t5.io.safetensors" "$dx/block.pt2"
has "guards: the symbols and ranges" "$tmp/err" "s77 in [1, 64], hint 2"
has "guards: the binding" "$tmp/err" "dynamic shapes: the inputs bind s27=5, s77=1"

check "--debug-dir of a dynamic archive" 0 "$fxc" --no-cache --debug-dir "$tmp/dbg" -o "$tmp/b.fxo" "$dx/block.pt2"
dyn=$(ls -d "$tmp"/dbg/run_*/fxc 2>/dev/null | head -1)/dynamic_shapes.txt
has "the trace lists each symbol with the input dim that gives it" "$dyn" "s77 in [1, 64], hint 2 (input_0 'x' dim 0)"
has "the trace says what was compiled" "$dyn" "compiled at s27=16, s77=2"
has "the trace holds the symbolic graph" "$dyn" "f32[s77, s27, 128]"

# Data-dependent sizes (test/fixtures/datadep, tools/export_datadep.py): boolean-mask indexing,
# nonzero, masked_select and unique give sizes torch.export names u0..; eager runs them and
# matches PyTorch on inputs that find different counts; everything else names the node.
dd=$src/test/fixtures/datadep
for name in masked_mean nonzero_gather select_unique dynamic_select; do
  for g in "$dd/$name.pt2" "$dd/$name.core.pt2"; do
    base=$(basename "$g")
    for io in "$dd/$name".*.io.safetensors; do
      run "eager $base at $(basename "$io")" --backend=eager --run --inputs "$io" --expect "$io" "$g"
    done
    check "inductor refuses $base" 1 "$fxc" --backend=inductor --run --inputs "$io" "$g"
    has "inductor on $base: the message names the data-dependent size" "$tmp/err" "(a data-dependent size); such graphs run only with --backend=eager --run"
    check "an .fxo of $base is refused" 1 "$fxc" --no-cache -o "$tmp/dd.fxo" "$g"
    check "train mode on $base is refused" 1 "$fxc" --mode=train --backend=aot_eager --run "$g"
    has "train mode on $base: AOT autograd needs the sizes" "$tmp/err" "AOT autograd need every size"
  done
done
check "--emit=fx of a data-dependent graph" 0 "$fxc" --emit=fx -o "$tmp/dd.txt" "$dd/nonzero_gather.pt2"
matches "the graph prints the data-dependent size" "$tmp/dd.txt" 'i64\[u[0-9]+, 2\]'
check "--log=guards of a data-dependent graph" 0 "$fxc" --log=guards --backend=eager --run \
  --inputs "$dd/masked_mean.0.io.safetensors" "$dd/masked_mean.pt2"
matches "guards: the unbacked symbol, its range and the node giving it" "$tmp/err" \
  'u[0-9]+ in \[0, 30\] \(data-dependent\), dim 0 of node'

exit $fail
