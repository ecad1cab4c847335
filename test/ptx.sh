#!/usr/bin/env bash
# Cross-compilation for CUDA on a machine without a GPU: every fixture (both exports, inference
# and train) compiles with --device=cuda --emit=ptx, and every kernel's PTX assembles with
# ptxas -arch=sm_90 (none spilling under a register bound fxc set), and so does the -o file whole
# (one module); FileCheck on the PTX of the kernel kinds (test/golden/ptx_*.check); and
# --emit=llvm for cuda writes the kernels' LLVM IR as one module.
# Usage: ptx.sh <fxc>
set -u
fxc=$1
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fx=$src/test/fixtures
ptxas=${PTXAS:-}
[ -x "$ptxas" ] || ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; kernels=0
. "$src/test/lib/common.sh"
filecheck=$(filecheck_path)
if [ ! -x "$ptxas" ]; then bad "ptxas not found (CUDA Toolkit at /usr/local/cuda)"; exit 1; fi
emit_ptx() { # emit_ptx <label> <dir> <fxc args...>: --emit=ptx to <dir>.ptx, debug trace in <dir>
  local label=$1 d=$2; shift 2
  "$fxc" --device=cuda --emit=ptx --debug-dir="$d" -o "$d.ptx" "$@" >"$tmp/out" 2>&1 && return 0
  bad "$label: fxc" "$(head -5 "$tmp/out")"; return 1
}
bounded=0
assemble() { # assemble <label> <dir>: every .ptx under <dir> through ptxas; their count in $n
  # A kernel whose registers fxc bounds (.minnctapersm: lean row kernels) must not spill.
  local p; n=0
  for p in $(find "$2" -name '*.ptx' | sort); do
    n=$((n + 1))
    "$ptxas" -arch=sm_90 -v "$p" -o "$tmp/k.cubin" >"$tmp/err" 2>&1 ||
      bad "$1: ptxas $(basename "$p")" "$(head -5 "$tmp/err")"
    if grep -q '^\.minnctapersm' "$p"; then
      bounded=$((bounded + 1))
      grep -qE '[1-9][0-9]* bytes spill' "$tmp/err" &&
        bad "$1: $(basename "$p") spills under its register bound" "$(grep -E 'registers|spill' "$tmp/err")"
    fi
  done
  kernels=$((kernels + n))
}
for g in "$fx"/*.pt2; do
  name=$(basename "$g" .pt2)
  for mode in inference train; do
    [ $mode = train ] && [ ! -f "$fx/${name%.core}.grad.safetensors" ] && continue
    d=$tmp/$name-$mode
    emit_ptx "$name $mode" "$d" --mode=$mode "$g" || continue
    assemble "$name $mode" "$d"
    grep -q "^\.visible \.entry" "$d.ptx" || bad "$name $mode: --emit=ptx output has no kernel entry"
    ok "$name $mode: $n kernels assemble"
  done
done
# A bf16 graph (test/graphs/norms_bf16.fxg): narrow loads and stores, f32 compute.
d=$tmp/norms_bf16
if emit_ptx norms_bf16 "$d" "$src/test/graphs/norms_bf16.fxg"; then
  assemble norms_bf16 "$d"; ok "norms_bf16: $n kernels assemble"
fi
# The bench models' bf16 graphs at their goal sizes (norms 8192 x 4096, block 8 x 512 x 768).
for m in norms.bf16 block.bf16; do
  d=$tmp/bench-$m
  if emit_ptx "$m" "$d" "$src/bench/models/$m.fxg"; then
    assemble "$m" "$d"; ok "$m (bench): $n kernels assemble"
  fi
done
# bench/norms_structures.cu (the CUDA C experiments behind the norms kernel, run with nvcc on the
# GPU machine) stays compilable.
nvcc=$(dirname "$ptxas")/nvcc
if [ -x "$nvcc" ] && "$nvcc" -O3 -arch=sm_90 -std=c++17 -o "$tmp/norms_structures" \
    "$src/bench/norms_structures.cu" >"$tmp/out" 2>&1; then
  ok "bench/norms_structures.cu compiles (nvcc)"
else bad "bench/norms_structures.cu: nvcc ($nvcc)" "$(head -5 "$tmp/out" 2>/dev/null)"; fi
[ $kernels -gt 0 ] || bad "no kernels"
[ $bounded -ge 4 ] && ok "$bounded register-bounded kernels checked for spills" ||
  bad "only $bounded kernels carry .minnctapersm (expected the lean row kernels of norms and block)"
# Warp-shuffle block reductions in the norms kernel (FileCheck on the PTX).
if [ -z "$filecheck" ]; then bad "FileCheck not found (llvm-19-tools)"
elif "$filecheck" "$src/test/golden/ptx_norms.check" --input-file="$tmp/norms-inference.ptx"; then
  ok "FileCheck norms PTX: warp-shuffle reductions"
else bad "FileCheck norms PTX: warp-shuffle reductions"; fi
# 16-byte vector accesses: a pointwise kernel (mlp), a persistent row (norms), bf16 (FileCheck).
if [ -n "$filecheck" ]; then
  for pre in POINTWISE:mlp-inference PERSISTENT:norms-inference BF16:norms_bf16; do
    if "$filecheck" "$src/test/golden/ptx_vector.check" --check-prefix="${pre%%:*}" \
        --input-file="$tmp/${pre#*:}.ptx"; then
      ok "FileCheck ${pre#*:} PTX: vector accesses (${pre%%:*})"
    else bad "FileCheck ${pre#*:} PTX: vector accesses (${pre%%:*})"; fi
  done
fi
# The short-row form (a thread per row): convnet at its benchmark size, 1M pooling rows of 4
# (NCHW: channels-last pooling reads its rows with a stride of the channel count).
d=$tmp/convnet_bench
if emit_ptx convnet.f32 "$d" --conv-layout=nchw "$src/bench/models/convnet.f32.fxg"; then
  assemble convnet.f32 "$d"; ok "convnet.f32 (bench): $n kernels assemble"
  if [ -n "$filecheck" ] && "$filecheck" "$src/test/golden/ptx_short_row.check" --check-prefix=SHORTROW \
      --input-file="$d.ptx"; then
    ok "FileCheck convnet.f32 PTX: a thread per short row (SHORTROW)"
  else bad "FileCheck convnet.f32 PTX: a thread per short row (SHORTROW)"; fi
fi
# --emit=llvm for cuda: the kernels' LLVM IR (as generated, before libdevice) in one module,
# after a line per kernel, as many as --emit=ptx lists.
check "cuda --emit=llvm" 0 "$fxc" --device=cuda --emit=llvm -o "$tmp/mlp.ll" "$fx/mlp.pt2"
has "cuda --emit=llvm: kernel separators" "$tmp/mlp.ll" "; ===== fxc kernel mlp__0_inference_0.0/"
has "cuda --emit=llvm: NVPTX modules" "$tmp/mlp.ll" 'target triple = "nvptx64-nvidia-cuda"'
check "cuda --emit=ptx of the same graph" 0 "$fxc" --device=cuda --emit=ptx -o "$tmp/mlp.ptx" \
  "$fx/mlp.pt2"
nll=$(grep -c "^; ===== fxc kernel" "$tmp/mlp.ll"); nptx=$(grep -c "^// ===== fxc kernel" "$tmp/mlp.ptx")
[ "$nll" -ge 1 ] && [ "$nll" -eq "$nptx" ] && ok "cuda --emit=llvm: $nll kernels, as many as PTX" ||
  bad "cuda --emit=llvm: $nll LLVM kernels, $nptx PTX kernels"
# --trace of a CUDA compile: the kernels' code generation runs on every hardware thread; spans
# of another thread than the driver's are on a track of their own (3, 4, ...) with a name.
check "cuda --trace" 0 "$fxc" --device=cuda --emit=ptx --trace="$tmp/t.json" -o "$tmp/n.ptx" \
  "$src/bench/models/norms.f32.fxg"
if python3 - "$tmp/t.json" "$(nproc)" <<'PY'; then ok "cuda --trace: codegen spans per thread"; else bad "cuda --trace"; fi
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
spans = [e for e in ev if e["ph"] == "X"]
named = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and "tid" in e}
assert named.get(1) == "compile passes", named
tids = {e["tid"] for e in spans}
assert 2 not in tids, "track 2 is for a benchmarked run's kernels"
assert all(t == 1 or named.get(t, "").startswith("compile passes (worker ") for t in tids), (tids, named)
per_kernel = [e for e in spans if e["name"] == "NVPTX back end (PTX)"]
assert per_kernel, "no per-kernel codegen spans"
PY
# -o is ONE PTX module holding every kernel of every graph (what ptxas, cuModuleLoadData and
# cuobjdump take): the whole file of every fixture above assembles with ptxas -arch=sm_90, once
# .version, and an .entry for every kernel its "// ===== fxc kernel" lines list (a kernel a
# forward kernel's name has is renamed: "(symbol <name>_backward)"; berttiny's backward has one).
emit_ptx "berttiny train" "$tmp/berttiny-train" --mode=train "$fx/berttiny.pt2" &&
  has "berttiny train: a renamed kernel" "$tmp/berttiny-train.ptx" "_backward) ====="
for f in $(ls "$tmp"/*-inference.ptx "$tmp"/*-train.ptx 2>/dev/null | sort); do
  label=$(basename "$f" .ptx)
  if "$ptxas" -arch=sm_90 "$f" -o "$tmp/whole.cubin" >"$tmp/err" 2>&1; then
    ok "$label: the -o file assembles whole (ptxas)"
  else bad "$label: ptxas rejects the -o file" "$(head -5 "$tmp/err")"; fi
  [ "$(grep -c '^\.version' "$f")" -eq 1 ] || bad "$label: $(grep -c '^\.version' "$f") .version lines"
  sed -n 's/^\/\/ ===== fxc kernel [^/]*\/\([^ ]*\)\( (symbol \([^)]*\))\)\{0,1\} =====$/\1 \3/p' "$f" |
    awk '{ print $2 != "" ? $2 : $1 }' | sort >"$tmp/listed"
  sed -n 's/^\.visible \.entry \([A-Za-z0-9_$]*\)(.*/\1/p' "$f" | sort >"$tmp/entries"
  nk=$(find "$tmp/$label" -path '*/kernels/*.ptx' | wc -l)
  if [ -s "$tmp/listed" ] && cmp -s "$tmp/listed" "$tmp/entries" && [ "$(wc -l <"$tmp/listed")" -eq "$nk" ]; then
    ok "$label: one .entry per kernel ($nk)"
  else bad "$label: kernels listed, entries and per-kernel files differ ($nk files)" \
    "$(diff "$tmp/listed" "$tmp/entries")"; fi
done
ls "$tmp"/*-train.ptx >/dev/null 2>&1 || bad "no train-mode -o file was written"
# The same file twice: byte-identical.
"$fxc" --device=cuda --mode=train --emit=ptx -o "$tmp/again.ptx" "$fx/block.pt2" &&
  same "cuda --emit=ptx -o is deterministic" "$tmp/block-train.ptx" "$tmp/again.ptx"
# --emit=llvm for cuda -o: one module (as generated, before libdevice) that llvm-as-19 takes.
llvm_as=$(command -v llvm-as-19 || command -v llvm-as || true)
for mode in inference train; do
  check "cuda --emit=llvm block $mode" 0 "$fxc" --device=cuda --mode=$mode --emit=llvm \
    -o "$tmp/block-$mode.ll" "$fx/block.pt2"
  if [ -z "$llvm_as" ]; then missing "cuda --emit=llvm block $mode not assembled" "llvm-as-19 not found (llvm-19-tools)"
  elif "$llvm_as" "$tmp/block-$mode.ll" -o "$tmp/block-$mode.bc" 2>"$tmp/as"; then
    ok "llvm-as-19 takes cuda --emit=llvm block $mode whole"
  else bad "llvm-as-19 rejects cuda --emit=llvm block $mode" "$(cat "$tmp/as")"; fi
done
echo "$kernels kernels checked with ptxas"
exit $fail
