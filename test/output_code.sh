#!/usr/bin/env bash
# output_code.cpp of the MLP (docs/design.md §4) builds with the system compiler against the kernels'
# LLVM IR and runs, printing its own median time; so does the bf16 MLP's, with its prepare().
# Usage: output_code.sh <fxc>
set -u
fxc=$(realpath "$1")
src=${FXC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
llc=$(command -v llc-19 || echo /usr/lib/llvm-19/bin/llc)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/test/lib/common.sh"
"$fxc" --backend=inductor --device=cpu --run --debug-dir="$tmp/d" "$src/test/fixtures/mlp.pt2" >/dev/null 2>&1 ||
  { bad "fxc run"; exit 1; }
dir=$(find "$tmp/d" -type d -name 'mlp__0_inference_0.0' | head -n 1)
cd "$dir" || { bad "no graph folder"; exit 1; }
for f in kernels/*.ll; do
  "$llc" -O2 -filetype=obj -relocation-model=pic "$f" -o "${f%.ll}.o" || { bad "llc $f"; exit 1; }
done
g++ -std=c++20 -O2 output_code.cpp kernels/*.o -lopenblas -lpthread -o model 2>"$tmp/err" ||
  { bad "g++ output_code.cpp" "$(head -20 "$tmp/err")"; exit 1; }
out=$(./model 3) || { bad "./model exited $?"; exit 1; }
echo "$out" | grep -qi "median" && ok "output_code.cpp builds and runs: $(echo "$out" | grep -i median | head -n 1)" ||
  { bad "./model printed no median: $out"; exit 1; }
# --dtype=bf16 freezes the weight casts: output_code.cpp runs them once, in prepare(), before the
# timed runs. Its matmuls are fallback calls, so it links fxc's runtime from the build folder.
build=$(dirname "$fxc")
"$fxc" --dtype=bf16 --run --debug-dir="$tmp/b" "$src/test/fixtures/mlp.pt2" >/dev/null 2>&1 ||
  { bad "fxc --dtype=bf16 run"; exit 1; }
dir=$(find "$tmp/b" -type d -name 'mlp__0_inference_0.0' | head -n 1)
cd "$dir" || { bad "no bf16 graph folder"; exit 1; }
has "bf16 output_code.cpp prepares the weight casts once" output_code.cpp "  prepare();"
if [ ! -f "$build/libfxc_runtime.a" ] || [ ! -f "$build/libfxc_frontend.a" ]; then
  missing "bf16 output_code.cpp build" "no libfxc_runtime.a beside $fxc"
  exit $fail
fi
for f in kernels/*.ll; do
  "$llc" -O2 -filetype=obj -relocation-model=pic "$f" -o "${f%.ll}.o" || { bad "llc $f"; exit 1; }
done
g++ -std=c++20 -O2 -DFXC_WITH_RUNTIME -I"$src" -I"$src/include" output_code.cpp kernels/*.o \
  "$build/libfxc_runtime.a" "$build/libfxc_frontend.a" -lzstd -lzip -lopenblas -lpthread -ldl \
  -o model 2>"$tmp/err" || { bad "g++ bf16 output_code.cpp" "$(head -20 "$tmp/err")"; exit 1; }
out=$(./model 3) || { bad "bf16 ./model exited $?"; exit 1; }
echo "$out" | grep -qi "median" && ok "bf16 output_code.cpp builds and runs: $(echo "$out" | grep -i median | head -n 1)" ||
  bad "bf16 ./model printed no median: $out"
exit $fail
