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
# One clang-format for every file: a process per file takes minutes on a loaded machine.
if report=$("$clang_format" --dry-run --Werror "${files[@]}" 2>&1); then
  echo "format-check: ${#files[@]} files ok"
  exit 0
fi
mapfile -t bad < <(sed -nE 's/^([^:]+):[0-9]+:[0-9]+: error: code should be clang-formatted.*/\1/p' <<<"$report" | sort -u)
if [ ${#bad[@]} -eq 0 ]; then  # clang-format failed for another reason: say it
  echo "$report"
  exit 1
fi
printf 'format-check: %s\n' "${bad[@]#"$PWD/"}"
echo "format-check: ${#bad[@]} of ${#files[@]} files differ from .clang-format (ci/format-check.sh --fix)"
exit 1
