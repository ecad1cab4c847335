#!/usr/bin/env bash
# The H200 table of docs/perf.md from ONE device call: PyTorch eager and torch.compile
# (bench/anchors/seed_models.py at the goal sizes, f32 and bf16; torch_compare.py on the
# fixtures), fxc --device=cuda --bench --json on the same work (bench/models/*.fxg; the fixtures
# with their .io.safetensors inputs), and the copy-bandwidth floor for norms
# (bench/anchors/copy_bw.py). Run on the GPU machine from the repository root with the package of
# tools/build-gpu.sh carried:
#
#   run(command="bash bench/gpu_anchor.sh", carry=["carry/fxc-gpu.tar.gz"], timeout_s=600)
#
# Writes to $OUT (3 files): anchor.json (every result), perf_table.md (bench/perf_table.py's
# tables) and anchor.log. Each goal-size case runs twice in fxc: as compiled by default, and with
# --max-autotune (tuned on this device during the compile, from an empty autotune cache). Subsets for trial runs: CASES=mlp,norms DTYPES=f32 FIXTURES=mlp
# (FIXTURES= none skips them; TORCH=0 skips PyTorch). About 4-5 minutes for everything.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkg=${PKG:-$root/carry/fxc-gpu.tar.gz}
out=${OUT:-$root/gpu-logs}
cases=${CASES:-mlp,mlp_train,block,convnet,norms}
dtypes=${DTYPES:-f32,bf16}
fixtures=${FIXTURES:-mlp,block,convnet,norms,embed,berttiny}
torch=${TORCH:-1}
py=/opt/torch/.venv/bin/python3
[ -x "$py" ] || py=python3
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$out/anchor.log
exec > >(tee "$log") 2>&1
. "$root/bench/lib_gpu.sh"
res=$work/results
mkdir -p "$res"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t_start=$SECONDS
stamp() { echo "=== [$((SECONDS - t_start)) s] $*"; }

# fxc first (it needs no warm-up of PyTorch): every case and dtype, then the fixtures.
for c in ${cases//,/ }; do
  for d in ${dtypes//,/ }; do
    stamp "fxc $c $d"
    mode=inference; [ "$c" = mlp_train ] && mode=train
    timeout 120 "$fxc" --device=cuda --mode=$mode --bench --json "$root/bench/models/$c.$d.fxg" \
      >"$res/fxc_${c}_$d.json" 2>"$res/fxc_${c}_$d.err"
    echo "exit $?"; head -c 600 "$res/fxc_${c}_$d.err"
    # The same with --max-autotune (a fresh autotune cache: the compile times the candidates).
    stamp "fxc --max-autotune $c $d"
    timeout 180 "$fxc" --device=cuda --mode=$mode --max-autotune --cache-dir="$work/autotune" \
      --log=autotune --bench --json "$root/bench/models/$c.$d.fxg" \
      >"$res/fxctuned_${c}_$d.json" 2>"$res/fxctuned_${c}_$d.err"
    echo "exit $?"; grep -E -- "-> |cached" "$res/fxctuned_${c}_$d.err" | cut -c1-200 | head -20
  done
done
for f in ${fixtures//,/ }; do
  [ "$f" = none ] && break
  stamp "fxc fixture $f"
  timeout 120 "$fxc" --device=cuda --bench --json --inputs "$root/test/fixtures/$f.io.safetensors" \
    "$root/test/fixtures/$f.pt2" >"$res/fxcfix_$f.json" 2>"$res/fxcfix_$f.err"
  echo "exit $?"; head -c 600 "$res/fxcfix_$f.err"
done

if [ "$torch" = 1 ]; then
  stamp "copy bandwidth"
  timeout 120 "$py" "$root/bench/anchors/copy_bw.py" --json "$res/copy.json"
  for d in ${dtypes//,/ }; do
    stamp "seed_models.py --dtype $d --only $cases"
    timeout 300 "$py" "$root/bench/anchors/seed_models.py" --dtype "$d" --only "$cases" \
      --json "$res/seed_$d.json"
  done
  if [ "$fixtures" != none ]; then
    stamp "torch_compare.py on the fixtures"
    # torch_compare pairs the i-th --inputs with the i-th graph; the graphs must come first.
    graphs=(); ins=()
    for f in ${fixtures//,/ }; do
      graphs+=("$root/test/fixtures/$f.pt2"); ins+=(--inputs "$root/test/fixtures/$f.io.safetensors")
    done
    timeout 300 "$py" "$root/bench/anchors/torch_compare.py" "${graphs[@]}" "${ins[@]}" \
      --json "$res/torch_fixtures.json"
  fi
fi

stamp "combining"
python3 "$root/bench/perf_table.py" --combine "$res" --out "$out/anchor.json" >"$out/perf_table.md"
cat "$out/perf_table.md"
stamp "done"
