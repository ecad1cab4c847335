#!/usr/bin/env bash
# The zoo on the H200 (issue 20): torchvision's ResNet-50, MobileNetV3-Large, ViT-B/16,
# EfficientNet-B0 and ConvNeXt-Tiny (224x224), a 2-layer Llama (hidden 256, GQA, 128 tokens,
# logits) and BERT-base (128 tokens), float32, exported by torch.export with core ATen's
# run_decompositions(), each timed in ONE device call against PyTorch eager and torch.compile:
#
#   fxc --device=cuda --bench --json M.pt2     (defaults: TF32 convolutions as PyTorch, CUDA graphs)
#   fxc --device=cuda --allow-tf32 --bench --json M.pt2             (TF32 matmuls too)
#   fxc --device=cuda --mode=train [--allow-tf32] --bench --json M.pt2
#   fxc --device=cuda --tf32=none --run --expect (outputs against PyTorch's CPU eager, rtol/atol
#   2e-3, exact float32)
#   PyTorch: eager, torch.compile modes "default" and "reduce-overhead" ("max-autotune" with
#   MAX_AUTOTUNE=1: it compiles slowly), inference under no_grad and a train step (forward then
#   backward of out.sum()), all timed with triton's do_bench (bench/gpu_zoo.py).
#
# Run on the GPU machine from the repository root with the package of tools/build-gpu.sh:
#
#   run(command="BATCHES=1 bash bench/gpu_zoo.sh", carry=["carry"], timeout_s=600)
#
# How the time is spent: one Python process per model and batch exports the model (for fxc) and
# compiles every torch.compile variant, all processes at once (the CPU work); once all are ready
# (or at the compile deadline, when the laggards are stopped and reported) fxc runs model after
# model, then the Python processes time PyTorch one at a time. Nothing is timed while anything
# compiles. WAIT_PID=<pid> also waits for that process (a test run started beside this script)
# before anything is timed. One model's failure is recorded (first error line) and the others go on.
#
# Settings: DTYPE (f32, the default, or bf16: fxc --dtype=bf16 against PyTorch under
# torch.autocast(bfloat16), both from the float32 model; the output check then allows 5e-2),
# BATCHES (default 1,8), MODELS (default all: resnet50, mobilenet_v3_large, vit_b_16,
# efficientnet_b0, convnext_tiny, llama2l, bert_base), MAX_AUTOTUNE=1, TRAIN_MODES (torch.compile
# modes for the train step, default "default"; "none": no train rows), FXC_TRAIN=0 (no fxc train
# rows), DEADLINE (seconds for the whole script, default 570), RESERVE_PER_MODEL (seconds kept
# for each model's timing after the compile phase, default 25), KEEP=<dir> (keep the exports,
# NAME_bB.pt2 and .io.safetensors, there), EXPORT=default (the models as torch.export writes them,
# scaled_dot_product_attention whole, instead of core ATen's decomposition).
# Writes to $OUT (4 files): zoo.md (the tables), zoo.json (every number), zoo.log, zoo_raw.tar.gz
# (every fxc JSON and stderr, every PyTorch log).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkg=${PKG:-$root/carry/fxc-gpu-fxc.tar.xz}
out=${OUT:-$root/gpu-logs}
batches=${BATCHES:-1,8}
models=${MODELS:-resnet50,mobilenet_v3_large,vit_b_16,efficientnet_b0,convnext_tiny,llama2l,bert_base}
modes=default,reduce-overhead
[ "${MAX_AUTOTUNE:-0}" = 1 ] && modes=$modes,max-autotune
train_modes=${TRAIN_MODES:-default}
fxc_train=${FXC_TRAIN:-1}
dtype=${DTYPE:-f32}
case $dtype in
f32) sfx= fxc_dtype=() tol=2e-3 ;;
bf16) sfx=_bf16 fxc_dtype=(--dtype=bf16) tol=5e-2 ;;
*) echo "error: DTYPE=$dtype: f32 or bf16" >&2; exit 2 ;;
esac
deadline=${DEADLINE:-570}
py=/opt/torch/.venv/bin/python3
[ -x "$py" ] || py=python3
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
exec > >(tee "$out/zoo.log") 2>&1
t_start=$SECONDS
stamp() { echo "=== [$((SECONDS - t_start)) s] $*"; }
left() { echo $((deadline - (SECONDS - t_start))); }
. "$root/bench/lib_gpu.sh"
export FXC_CACHE_DIR=$work/fxc-cache
res=$work/res
mkdir -p "$res"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
"$py" -c 'import torch, torchvision, transformers; print("torch", torch.__version__, "torchvision", torchvision.__version__, "transformers", transformers.__version__)'

tags=()
declare -A pid_of
for b in ${batches//,/ }; do
  for m in ${models//,/ }; do
    tag=${m}${sfx}_b$b
    tags+=("$tag")
    "$py" "$root/bench/gpu_zoo.py" model "$m" "$b" "$res" --modes "$modes" --train-modes "$train_modes" --dtype "$dtype" \
      --deadline $(($(date +%s) + deadline - 15)) >"$res/$tag.torch.log" 2>&1 &
    pid_of[$tag]=$!
  done
done
n=${#tags[@]}
stamp "started $n PyTorch processes (export, then torch.compile $modes; train: $train_modes)"

# Barrier: every process ready (or gone), and WAIT_PID done; at most until the compile deadline,
# which leaves RESERVE_PER_MODEL seconds a model for timing.
compile_deadline=$((deadline - ${RESERVE_PER_MODEL:-25} * n - 20))
while :; do
  ready=0
  for t in "${tags[@]}"; do
    if [ -f "$res/$t.ready" ] || ! kill -0 "${pid_of[$t]}" 2>/dev/null; then ready=$((ready + 1)); fi
  done
  waiting=0
  [ -n "${WAIT_PID:-}" ] && kill -0 "$WAIT_PID" 2>/dev/null && waiting=1
  [ $ready -eq $n ] && [ $waiting -eq 0 ] && break
  if [ $((SECONDS - t_start)) -ge $compile_deadline ]; then
    stamp "compile deadline: $ready of $n ready, WAIT_PID running: $waiting"
    for t in "${tags[@]}"; do
      if [ ! -f "$res/$t.ready" ] && kill -0 "${pid_of[$t]}" 2>/dev/null; then
        kill "${pid_of[$t]}"
        echo "$t: PyTorch's export and compiles did not finish within $compile_deadline s; stopped" >>"$res/notes.txt"
      fi
    done
    break
  fi
  sleep 1
done
stamp "all compiled; export times: $(cd "$res" && grep -ho '"export_s": [0-9.]*' ./*.torch.json | tr '\n' ' ')"

# fxc, model after model.
fxc_run() { # fxc_run <tag> <variant> <timeout> <fxc args...>
  local tag=$1 v=$2 lim=$3
  shift 3
  if [ "$(left)" -lt $((lim / 2 + 30)) ]; then
    echo "skipped: not enough time left" >"$res/$tag.fxc_$v.err"
    return
  fi
  timeout "$lim" "$fxc" --device=cuda "${fxc_dtype[@]}" "$@" >"$res/$tag.fxc_$v.json" 2>"$res/$tag.fxc_$v.err"
  local rc=$?
  [ $rc -eq 124 ] && echo "error: timed out after $lim s" >>"$res/$tag.fxc_$v.err"
  printf '%-28s %-16s exit %3d  %s\n' "$tag" "$v" $rc \
    "$(grep -o '"median_ms": [0-9.e-]*' "$res/$tag.fxc_$v.json" | head -1)$(grep -m1 -i error "$res/$tag.fxc_$v.err" | cut -c1-160)"
}
for t in "${tags[@]}"; do
  pt2=$res/$t.pt2 io=$res/$t.io.safetensors
  if [ ! -f "$pt2" ] || [ ! -f "$io" ]; then echo "$t: no export, no fxc run"; continue; fi
  stamp "fxc $t"
  fxc_run "$t" fxc 90 --bench --json --inputs "$io" "$pt2"
  fxc_run "$t" fxc_fast 90 --allow-tf32 --bench --json --inputs "$io" "$pt2"
  if [ "$(left)" -gt 60 ]; then
    timeout 60 "$fxc" --device=cuda "${fxc_dtype[@]}" --tf32=none --run --inputs "$io" --expect "$io" --rtol $tol --atol $tol "$pt2" \
      >"$res/$t.fxc_check.err" 2>&1
    echo $? >"$res/$t.fxc_check.rc"
    echo "$t check: exit $(cat "$res/$t.fxc_check.rc") $(tail -1 "$res/$t.fxc_check.err" | cut -c1-200)"
    if [ -f "$res/$t.amp.safetensors" ]; then # bf16: against PyTorch's autocast output too
      timeout 60 "$fxc" --device=cuda "${fxc_dtype[@]}" --tf32=none --run --inputs "$io" --expect "$res/$t.amp.safetensors" \
        --rtol $tol --atol $tol "$pt2" >"$res/$t.fxc_amp_check.err" 2>&1
      echo "$t check against torch.autocast: exit $? $(grep -m1 'max abs\|Greatest absolute' "$res/$t.fxc_amp_check.err" | cut -c1-160)" \
        "(torch.autocast vs float32: $(grep -o '"autocast_max_abs_error": [0-9.e-]*' "$res/$t.torch.json" | cut -d' ' -f2))"
    fi
  fi
  if [ "$fxc_train" = 1 ]; then
    fxc_run "$t" fxc_train 120 --mode=train --bench --json --inputs "$io" "$pt2"
    fxc_run "$t" fxc_train_fast 120 --mode=train --allow-tf32 --bench --json --inputs "$io" "$pt2"
  fi
done

# PyTorch's timing, one process at a time (gpu.lock), until the deadline.
stamp "PyTorch timing"
touch "$res/go"
for t in "${tags[@]}"; do
  p=${pid_of[$t]}
  while kill -0 "$p" 2>/dev/null; do
    if [ "$(left)" -le 12 ]; then
      kill "$p"
      echo "$t: PyTorch's timing did not finish before the deadline; stopped" >>"$res/notes.txt"
      break
    fi
    sleep 0.5
  done
  grep -h "torch done\|failed:" "$res/$t.torch.log" | cut -c1-300
done

stamp "combining"
"$py" "$root/bench/gpu_zoo.py" table "$res" --json "$out/zoo.json" >"$out/zoo.md"
[ -f "$res/notes.txt" ] && { echo; echo "Notes:"; sed 's/^/- /' "$res/notes.txt"; } >>"$out/zoo.md"
cat "$out/zoo.md"
[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$res"/*.pt2 "$res"/*.io.safetensors "$KEEP"/ 2>/dev/null
rm -f "$res"/*.pt2 "$res"/*.io.safetensors
tar -C "$work" -czf "$out/zoo_raw.tar.gz" res
stamp "done"
