#!/usr/bin/env bash
# Checks that every C and C++ file git tracks is formatted by clang-format-19 with .clang-format
# (tools/test.sh runs it first). With --fix it formats them in place instead.
# Usage: tools/check-format.sh [--fix]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cf=$(command -v clang-format-19 || true)
if [ -z "$cf" ]; then
  echo "error: clang-format-19 not found (tools/install-deps.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(git -C "$src" ls-files '*.c' '*.cpp' '*.h' '*.hpp')
cd "$src"
if [ "${1:-}" = --fix ]; then
  "$cf" -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$cf" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "error: ${#bad[@]} file(s) not formatted with clang-format-19 (run tools/check-format.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format: ${#files[@]} files formatted"
