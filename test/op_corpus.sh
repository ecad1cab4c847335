#!/usr/bin/env bash
# The single-op corpus: one small archive per sample of PyTorch's OpInfo database, exported by
# torch 2.11 as torch.export writes them (tools/export_single_ops.py on the GPU machine), in
# test/op_corpus/corpus.tar.xz. For each sample NAME both NAME.pt2 (the default export, which
# keeps ops such as aten.linear or aten.addcmul) and NAME.core.pt2 (core ATen) run:
#   - eager, against PyTorch's outputs (NAME.io.safetensors);
#   - inductor on the CPU, against PyTorch's outputs;
#   - the core archive through --device=cuda --emit=ptx, and ptxas -arch=sm_90 on the PTX.
# A random op's values come from fxc's generator, not PyTorch's: it must run, its values are not
# compared (manifest.json marks such samples, and so does a graph holding an op that
# `fxc --list-ops` tags random).
#
# By default (CI) each op's first float32 sample and its int64 sample run, the core archive on
# every check and the default export on eager; FXC_CORPUS=full runs every sample on every check.
# FXC_CORPUS_CUDA=1 (on the GPU machine: test/gpu/e2e/op_corpus_cuda.sh) runs instead each core
# archive through inductor on --device=cuda against PyTorch's outputs; such a check must pass
# unless expected.txt lists the sample's core inductor or ptx check.
# FXC_CORPUS_ONLY=<extended regex> keeps the samples whose name matches it (with --update, only
# their lines of the list are rewritten).
#
# test/op_corpus/expected.txt lists every check that fails today, with the first line of its
# error: such a check must still fail (a pass means the line is stale: remove it), every other
# check must pass. `op_corpus.sh <fxc> --update` rewrites the list from a run.
# Usage: op_corpus.sh <fxc> [--update]
set -u
fxc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
update=${2:-}
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
ptxas=${PTXAS:-}
[ -x "$ptxas" ] || ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ ! -x "$ptxas" ]; then missing "op corpus through ptxas" "ptxas not found (PTXAS unset)"; ptxas=; fi
expected=$src/test/op_corpus/expected.txt

mkdir -p "$tmp/c"
xz -dc "$src/test/op_corpus/corpus.tar.xz" | tar -x -C "$tmp/c" --strip-components=1 ||
  { bad "unpack test/op_corpus/corpus.tar.xz"; exit 1; }
# Random samples: "random": true in the manifest (a tiny JSON scan: one sample per object).
grep -o '"name": "[^"]*"\|"random": true' "$tmp/c/manifest.json" |
  awk -F'"' '/"name"/ {n=$4} /"random": true/ {print n}' >"$tmp/random"

# One check: "<sample> <variant> <backend> ok|fail <first error line>".
cat >"$tmp/one.sh" <<'EOF'
#!/usr/bin/env bash
fxc=$1 dir=$2 ptxas=$3 random=$4 name=$5 variant=$6 backend=$7
v=$variant; [ "$v" = - ] && v=   # "-": the default export, NAME.pt2
g=$dir/$name$v.pt2 io=$dir/$name.io.safetensors
out=$dir/$name$v.$backend.log
if [ "$backend" = cuda ]; then
  args=(--backend=inductor --device=cuda --tf32=none --no-cache --run --inputs "$io")
  grep -qxF "$name" "$random" || "$fxc" --backend=eager --emit=fx -o - "$g" 2>/dev/null |
    grep -qwF -f "$dir/random_ops" || args+=(--expect "$io" --rtol 1e-4 --atol 1e-5 --equal-nan)
  timeout 120 "$fxc" "${args[@]}" "$g" >"$out" 2>&1
elif [ "$backend" = ptx ]; then
  timeout 120 "$fxc" --backend=inductor --device=cuda --emit=ptx -o "$dir/$name.ptx" "$g" >"$out" 2>&1 &&
    { [ -z "$ptxas" ] || "$ptxas" -arch=sm_90 "$dir/$name.ptx" -o /dev/null >>"$out" 2>&1; }
else
  args=(--backend="$backend" --device=cpu --no-cache --run --inputs "$io")
  if ! grep -qxF "$name" "$random" &&
    ! "$fxc" --backend=eager --emit=fx -o - "$g" 2>/dev/null | grep -qwF -f "$dir/random_ops"; then
    args+=(--expect "$io" --rtol 1e-4 --atol 1e-5 --equal-nan)
  fi
  timeout 120 "$fxc" "${args[@]}" "$g" >"$out" 2>&1
fi
rc=$?
if [ $rc = 0 ]; then echo "$name $variant $backend ok"
else
  why=$(grep -m1 -E 'error|MISMATCH|Error|fatal' "$out" | sed "s|$dir/||g" | cut -c1-200)
  [ $rc = 124 ] && why="timed out after 120 s"
  echo "$name $variant $backend fail ${why:-exit $rc}"
fi
EOF
chmod +x "$tmp/one.sh"
"$fxc" --list-ops | awk '$NF ~ /random/ {print $1}' >"$tmp/c/random_ops"
[ -s "$tmp/c/random_ops" ] || { bad "fxc --list-ops tags no op random"; exit 1; }
full=${FXC_CORPUS:-}
for io in "$tmp"/c/*.io.safetensors; do
  name=$(basename "$io" .io.safetensors)
  case $name in *.0 | *.i64.0) first=1 ;; *) first= ;; esac
  [ "$full" = full ] || [ -n "$first" ] || continue
  [ -z "${FXC_CORPUS_ONLY:-}" ] || echo "$name" | grep -Eq -- "$FXC_CORPUS_ONLY" || continue
  if [ -n "${FXC_CORPUS_CUDA:-}" ]; then
    [ -f "$tmp/c/$name.core.pt2" ] && echo "$name .core cuda"
    continue
  fi
  [ -f "$tmp/c/$name.pt2" ] && echo "$name - eager"
  [ -f "$tmp/c/$name.pt2" ] && [ "$full" = full ] && echo "$name - inductor"
  if [ -f "$tmp/c/$name.core.pt2" ]; then
    echo "$name .core eager"; echo "$name .core inductor"; echo "$name .core ptx"
  fi
done >"$tmp/jobs"
xargs -P "${FXC_JOBS:-2}" -L1 "$tmp/one.sh" "$fxc" "$tmp/c" "$ptxas" "$tmp/random" \
  <"$tmp/jobs" | sort >"$tmp/results"

total=$(wc -l <"$tmp/results")
passed=$(awk '$4 == "ok"' "$tmp/results" | wc -l)
echo "op corpus: $passed of $total checks pass ($(wc -l <"$tmp/random") random samples run unchecked)"
if [ -n "${FXC_CORPUS_CUDA:-}" ]; then
  # The CUDA check of a sample may fail only where its CPU inductor or ptx check is listed.
  grep -v '^#' "$expected" | awk '$2 == ".core" && ($3 == "inductor" || $3 == "ptx") {print $1}' |
    sort -u >"$tmp/cpu_failing"
  new=$(awk '$4 == "fail" {print $1}' "$tmp/results" | sort | comm -23 - "$tmp/cpu_failing")
  if [ -z "$new" ]; then ok "op corpus on cuda: every sample that passes on the CPU passes"
  else
    bad "op corpus on cuda: $(echo "$new" | wc -l) samples fail that pass on the CPU" \
      "$(echo "$new" | while read -r n; do grep -m1 "^$n " "$tmp/results"; done)"
  fi
  exit $fail
fi
if [ "$update" = --update ]; then
  [ "$full" = full ] || { bad "--update needs FXC_CORPUS=full (the list covers every check)"; exit 1; }
  { echo "# Checks of test/op_corpus.sh that fail today: <sample> <variant> <backend> fail <why>."
    echo "# Written by 'test/op_corpus.sh <fxc> --update'; a check listed here must fail."
    { if [ -n "${FXC_CORPUS_ONLY:-}" ]; then
        grep -v '^#' "$expected" | awk '{ if ($1 !~ re) print }' re="$FXC_CORPUS_ONLY"
      fi
      awk '$4 == "fail"' "$tmp/results"; } | sort; } >"$expected.new"
  mv "$expected.new" "$expected"
  echo "wrote $expected"
  exit 0
fi
# Compare with the list (the checks that ran): a new failure, or a listed check that passes, is
# a failure.
awk '$4 == "fail" {print $1, $2, $3}' "$tmp/results" | sort >"$tmp/failing"
awk '{print $1, $2, $3}' "$tmp/results" | sort >"$tmp/ran"
grep -v '^#' "$expected" | awk '{print $1, $2, $3}' | sort | comm -12 - "$tmp/ran" >"$tmp/listed"
new=$(comm -23 "$tmp/failing" "$tmp/listed")
stale=$(comm -13 "$tmp/failing" "$tmp/listed")
if [ -z "$new" ]; then ok "op corpus: every check not in expected.txt passes"
else
  bad "op corpus: $(echo "$new" | wc -l) checks fail that expected.txt does not list" \
    "$(echo "$new" | while read -r n v b; do grep -m1 "^$n $v $b " "$tmp/results"; done)"
fi
if [ -z "$stale" ]; then ok "op corpus: every check in expected.txt still fails"
else bad "op corpus: $(echo "$stale" | wc -l) checks in expected.txt pass now: remove them" "$stale"; fi
exit $fail
