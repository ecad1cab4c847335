#!/usr/bin/env bash
# A CI step for one model: compile it to an artifact, run the artifact on recorded inputs and
# compare with the recorded outputs; when that fails, bisect the pipeline (which layer breaks,
# and at which node) and minify the graph to a repro kept next to the artifact.
#
#   examples/ci.sh <graph> <io.safetensors> [fxc flags...]
#   FXC=path/to/fxc  OUT=ci-out (artifact, depfile, bisect.txt, minifier/)  RTOL=1e-4  ATOL=1e-5
#
# <io.safetensors> holds the inputs (input_0..) and expected outputs (output_0..). Exit status:
# fxc's when compiling fails (1 bad graph, 2 usage, 70 internal compiler error); 1 when the run
# does not match (after bisecting and minifying); 0 when it matches.
set -u
FXC=${FXC:-fxc}
[ $# -ge 2 ] || { echo "usage: $0 <graph> <io.safetensors> [fxc flags...]" >&2; exit 2; }
graph=$1 io=$2
shift 2
out=${OUT:-ci-out}
tol=(--rtol="${RTOL:-1e-4}" --atol="${ATOL:-1e-5}")
name=$(basename "$graph")
name=${name%%.*}
mkdir -p "$out"

echo "== compile $graph -> $out/$name.fxo"
"$FXC" "$@" --diagnostics=json -MD -o "$out/$name.fxo" "$graph" || exit $?

echo "== run $out/$name.fxo on $io"
if "$FXC" --run --inputs "$io" --expect "$io" "${tol[@]}" "$out/$name.fxo"; then
  echo "== ok"
  exit 0
fi

echo "== the outputs do not match: bisecting the pipeline"
"$FXC" "$@" --bisect --inputs "$io" "${tol[@]}" "$graph" | tee "$out/bisect.txt"
echo "== minifying the graph"
"$FXC" "$@" --minify --inputs "$io" "${tol[@]}" --debug-dir="$out" "$graph"
echo "== failed: $out/bisect.txt names the stage; $out/minifier/repro.sh reproduces it"
exit 1
