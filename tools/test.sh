#!/usr/bin/env bash
# The README's test command: install what is missing, build, run the whole test suite
# (unit tests, golden and end-to-end scripts, and the error corpus under ASan/UBSan).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
bash "$src/tools/install-deps.sh"
bash "$src/tools/check-format.sh"   # clang-format-19, .clang-format
bash "$src/tools/build.sh"
(cd "$src/build" && ctest --output-on-failure -j2)
echo "== error corpus under AddressSanitizer + UndefinedBehaviorSanitizer"
FXC_BUILD_DIR=$src/build-asan FXC_BUILD_TYPE=Debug FXC_TARGETS=fxc bash "$src/tools/build.sh" -DFXC_SANITIZE=ON -DFXC_WITH_LLVM=OFF
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  FXC_SRC=$src bash "$src/test/error.sh" "$src/build-asan/fxc"
bash "$src/tools/fuzz.sh" 45   # each reader: libFuzzer, ASan + UBSan (docs/testing.md)
bash "$src/tools/tsan.sh"     # ThreadSanitizer: the parallel code generation (docs/testing.md)
echo "all tests passed"
