#!/usr/bin/env bash
# End to end for the op families of issue 18: each graph in test/graphs/ops/ runs on the eager
# backend (the reference kernels) and on inductor on the CPU, whose outputs must match eager's
# (integer and bool outputs exactly), with no op left to an extern fallback (--log=graph_breaks
# names none: scans, sorting, prod, scatters, index_put/index_add/index_fill, index.Tensor,
# roll and as_strided are lowered too); and with --device=cuda --emit=ptx its kernels must
# assemble with ptxas. Where <name>.in.safetensors and <name>.ref.safetensors exist (written by
# test/graphs/ops/make_refs.py from PyTorch), both backends run on those inputs and eager must
# match PyTorch's outputs. Usage: ops_e2e.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
ptxas=${PTXAS:-}
[ -x "$ptxas" ] || ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
for g in "$src"/test/graphs/ops/*.fxg; do
  name=$(basename "$g" .fxg)
  in=${g%.fxg}.in.safetensors ref=${g%.fxg}.ref.safetensors
  inputs=()
  [ -f "$in" ] && inputs=(--inputs="$in")
  check "$name: eager runs" 0 "$fxc" --backend=eager --run "${inputs[@]}" \
    --outputs="$tmp/$name.eager.safetensors" "$g"
  if [ -f "$in" ] && [ -f "$ref" ]; then
    check "$name: eager matches PyTorch" 0 "$fxc" --backend=eager --run "${inputs[@]}" \
      --expect="$ref" --rtol=1e-5 --atol=1e-5 "$g"
  fi
  check "$name: inductor (cpu) matches eager" 0 "$fxc" --backend=inductor --device=cpu --run \
    "${inputs[@]}" --expect="$tmp/$name.eager.safetensors" --rtol=1e-5 --atol=1e-6 \
    --log=graph_breaks "$g"
  hasnt "$name: inductor lowers every node (no fallback)" "$tmp/err" "fallback"
  check "$name: --device=cuda --emit=ptx" 0 "$fxc" --backend=inductor --device=cuda --emit=ptx \
    -o "$tmp/$name.ptx" "$g"
  if [ -x "$ptxas" ]; then
    check "$name: ptxas -arch=sm_90 assembles the PTX" 0 "$ptxas" -arch=sm_90 "$tmp/$name.ptx" \
      -o "$tmp/$name.cubin"
  else missing "$name through ptxas" "ptxas not found (PTXAS unset)"; fi
done
# A boolean-mask index_put with one value is a where (it lowers everywhere); with a vector of
# values it writes data-dependent positions, which a CUDA plan refuses (it never round-trips
# through the host) while the CPU plan calls the reference kernel.
for v in '[]' '[3]'; do
  cat > "$tmp/mask_put.fxg" <<EOF
{"format": "fxg", "version": 1, "name": "mask_put",
 "inputs": [{"name": "x", "dtype": "f32", "shape": [4, 6]}, {"name": "m", "dtype": "b8", "shape": [4, 6]},
            {"name": "v", "dtype": "f32", "shape": $v}],
 "nodes": [{"name": "put", "target": "aten.index_put.default", "args": [{"ref": "x"}, {"refs": ["m"]}, {"ref": "v"}]}],
 "outputs": ["put"]}
EOF
  if [ "$v" = '[]' ]; then
    check "mask index_put of one value: a CUDA plan lowers it" 0 "$fxc" --backend=inductor \
      --device=cuda --emit=ptx -o "$tmp/mask_put.ptx" "$tmp/mask_put.fxg"
    check "mask index_put of one value: the CPU plan runs it" 0 "$fxc" --backend=inductor \
      --device=cpu --run "$tmp/mask_put.fxg"
  else
    check "mask index_put of values: a CUDA plan refuses it" 1 "$fxc" --backend=inductor \
      --device=cuda --emit=ptx -o "$tmp/mask_put.ptx" "$tmp/mask_put.fxg"
    has "mask index_put of values: the error names the node and why" "$tmp/err" \
      "node 'put' (aten.index_put.default): index_put with a boolean mask index writes data-dependent positions and has no CUDA lowering"
    check "mask index_put of values: the CPU plan compiles it" 0 "$fxc" --backend=inductor \
      --device=cpu --no-cache -o "$tmp/mask_put.fxo" "$tmp/mask_put.fxg"
  fi
done
# masked_scatter: a source with fewer elements than the mask has ones is refused at run time
# (a data-dependent count), naming the node.
cat > "$tmp/ms_short.fxg" <<'EOF'
{"format": "fxg", "version": 1, "name": "ms_short",
 "inputs": [{"name": "x", "dtype": "f32", "shape": [2, 3]}, {"name": "s", "dtype": "f32", "shape": [2]}],
 "nodes": [{"name": "one", "target": "aten.ones_like.default", "args": [{"ref": "x"}, {"name": "dtype", "value": {"dtype": "b8"}}]},
           {"name": "msc", "target": "aten.masked_scatter.default", "args": [{"ref": "x"}, {"ref": "one"}, {"ref": "s"}]}],
 "outputs": ["msc"]}
EOF
check "masked_scatter: a short source is refused" 1 "$fxc" --backend=eager --run "$tmp/ms_short.fxg"
has "masked_scatter: the error names the node" "$tmp/err" \
  "node 'msc' (aten.masked_scatter.default): masked_scatter: expected source to have at least as many elements as ones in mask (2 elements)"
# _assert_tensor_metadata is checked at compile time.
sed 's/{"ints": \[4, 6\]}, {"ints": \[6, 1\]}/{"ints": [4, 5]}, {"ints": [6, 1]}/' \
  "$src/test/graphs/ops/assert_meta.fxg" > "$tmp/assert_bad.fxg"
check "_assert_tensor_metadata: a size mismatch fails to compile" 1 "$fxc" --backend=inductor \
  --device=cuda --emit=ptx -o "$tmp/assert_bad.ptx" "$tmp/assert_bad.fxg"
has "_assert_tensor_metadata: the error names the node" "$tmp/err" \
  "node 'chk' (aten._assert_tensor_metadata.default): tensor size mismatch: expected [4, 5]"
# A pointwise loop declares its iterations independent (llvm.loop.parallel_accesses), so that one
# writing its output in place over its input (arguments not noalias) still vectorizes: LLVM's
# overlap check on such arguments failed, and the loop ran as scalar code.
cat > "$tmp/inplace_mm.fxg" <<'EOF'
{"format": "fxg", "version": 1, "name": "inplace_mm",
 "inputs": [{"name": "x", "dtype": "f32", "shape": [64, 32]}, {"name": "w", "dtype": "f32", "shape": [32, 48]}],
 "nodes": [{"name": "m", "target": "aten.mm.default", "args": [{"ref": "x"}, {"ref": "w"}]},
           {"name": "y", "target": "aten.silu.default", "args": [{"ref": "m"}]}],
 "outputs": ["y"]}
EOF
check "pointwise loops: the memory plan" 0 "$fxc" --device=cpu --stop-after=plan-memory \
  -o "$tmp/imm.txt" "$tmp/inplace_mm.fxg"
has "pointwise loops: the kernel writes its output in place over its input" "$tmp/imm.txt" \
  "inplace: buf3 reuses buf2 in fused_sigmoid_mul_0"
check "pointwise loops: LLVM IR" 0 "$fxc" --device=cpu --stop-after=codegen -o "$tmp/imm.ll" \
  "$tmp/inplace_mm.fxg"
has "pointwise loops: arguments in one slot are not noalias" "$tmp/imm.ll" \
  "@fused_sigmoid_mul_0.body(i64 %xbegin, i64 %xend, ptr nocapture %buf0, ptr nocapture %buf1)"
has "pointwise loops: the loop is declared parallel" "$tmp/imm.ll" "llvm.loop.parallel_accesses"
check "pointwise loops: the in-place kernel matches the float64 reference" 0 "$fxc" \
  --backend=inductor --device=cpu --run --check-accuracy "$tmp/inplace_mm.fxg"
exit $fail
