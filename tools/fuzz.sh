#!/usr/bin/env bash
# Fuzzes fxc's readers (.pt2, .fxg, safetensors, .fxo) with libFuzzer. Builds the harnesses of
# test/fuzz/ into build-fuzz/ (clang-19, ASan + UBSan, no LLVM code generator), then runs each
# for SECONDS (default 600) from its seed corpus test/fuzz/corpus/<format>/. New inputs collect in
# build-fuzz/corpus/<format>/ (kept between runs); a crashing input is copied to
# build-fuzz/crashes/<format>/ and the script exits 1 once every harness has run.
# Usage: tools/fuzz.sh [SECONDS] [FORMAT...]    (tools/test.sh runs `tools/fuzz.sh 45`)
# A crash found becomes an error-corpus case (test/error/make_corpus.py) once it is fixed.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-600}
shift $(( $# > 0 ? 1 : 0 ))
formats=("$@")
[ ${#formats[@]} -gt 0 ] || formats=(pt2 fxg safetensors fxo)
build=${FXC_FUZZ_BUILD_DIR:-$src/build-fuzz}
targets=$(printf 'fuzz_%s ' "${formats[@]}")
CC=clang-19 CXX=clang++-19 FXC_BUILD_DIR=$build FXC_TARGETS=$targets \
  bash "$src/tools/build.sh" -DFXC_FUZZ=ON -DFXC_WITH_LLVM=OFF || exit 1
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for f in "${formats[@]}"; do
  corpus=$build/corpus/$f crashes=$build/crashes/$f
  mkdir -p "$corpus" "$crashes"
  log=$build/fuzz-$f.log
  echo "== fuzz_$f: ${secs} s from test/fuzz/corpus/$f"
  dict=(); [ -f "$src/test/fuzz/$f.dict" ] && dict=(-dict="$src/test/fuzz/$f.dict")
  "$build/fuzz_$f" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 -max_len=1048576 \
    "${dict[@]}" -artifact_prefix="$crashes/" -print_final_stats=1 "$corpus" \
    "$src/test/fuzz/corpus/$f" >"$log" 2>&1
  rc=$?
  grep -E '^stat::number_of_executed_units|^#[0-9]+ *DONE' "$log" | tail -2
  if [ $rc -ne 0 ]; then
    status=1
    echo "fuzz_$f FAILED (exit $rc); its input is in $crashes/, the report in $log:"
    grep -E 'ERROR|SUMMARY|terminate|what\(\)|Test unit written' "$log" | head -n 8
  fi
done
[ $status -eq 0 ] && echo "fuzzing: ${formats[*]} ok (${secs} s each)"
exit $status
