#!/usr/bin/env bash
# The format check: every tracked C++/CUDA source as .clang-format lays it out.
# Lists the files that differ and exits 1 if any does; `ci/format-check.sh --fix`
# reformats them in place instead.
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-clang-format}
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = --fix ]; then
  "$clang_format" -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$clang_format" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  printf 'format-check: %s\n' "${bad[@]}"
  echo "format-check: ${#bad[@]} of ${#files[@]} files differ from .clang-format (ci/format-check.sh --fix)"
  exit 1
fi
echo "format-check: ${#files[@]} files ok"
