#!/usr/bin/env bash
# The ThreadSanitizer stage of the test command: builds fxc with -fsanitize=thread into
# build-tsan/ (or $FXC_TSAN_BUILD_DIR) and runs the end-to-end compiles whose code generation
# runs on the compiler's thread pool, halting at the first race report:
#   test/determinism.sh (FXC_DETERMINISM_QUICK=1)  effnet_mini for CUDA (PTX, train and
#       inference) and the CPU (objects, .fxo) with --threads=1 and 8, same bytes each time
#   test/ptx.sh                                      every fixture cross-compiled for CUDA
#   test/runtime_threads.sh                          one loaded .fxo run from 8 threads x 200
#       runs through libfxcrt.so (examples/embed_cpp), outputs compared, weights swapped mid-way
# Only these: the other suites run no compile in parallel, and LLVM itself (Debian's, not
# instrumented) is where the time goes, so a slower instrumented fxc costs little here.
# Usage: tsan.sh
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${FXC_TSAN_BUILD_DIR:-$src/build-tsan}
FXC_BUILD_DIR=$build FXC_TARGETS="fxc fxcrt" bash "$src/tools/build.sh" -DFXC_TSAN=ON
# halt_on_error: the first report fails the compile (exit 66), so the suite fails.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
# TSan's shadow memory needs the fixed layout that high-entropy ASLR breaks on newer kernels.
run() { if setarch "$(uname -m)" -R true 2>/dev/null; then setarch "$(uname -m)" -R "$@"; else "$@"; fi; }
export FXC_SRC=$src
FXC_DETERMINISM_QUICK=1 run bash "$src/test/determinism.sh" "$build/fxc"
run bash "$src/test/ptx.sh" "$build/fxc"
FXC_TSAN=1 run bash "$src/test/runtime_threads.sh" "$build/fxc"
echo "tsan: no data race reported"
