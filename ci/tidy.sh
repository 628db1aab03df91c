#!/usr/bin/env bash
# clang-tidy (.clang-tidy) over minictx's sources in a build's compile database,
# then the findings counted by check. Exits 1 if there is any finding.
# Usage: ci/tidy.sh [build dir]   (default build, configured by `cmake --preset default`)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
# nproc obeys OMP_NUM_THREADS, which ci/test.sh sets to 1 for its ranks.
jobs=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
[ -f "$build/compile_commands.json" ] || cmake --preset default >/dev/null
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The program's sources, the reference and the verification driver; not the gtest
# files, whose macro expansions are slow to analyse and say nothing about the program.
# Much of its time goes to header-only libraries: clang-tidy 14 runs every check
# over system-header code too, only to drop what it finds there, and the five app/
# sources that include CLI11 take about a third of the whole run.
files="$PWD/(miniapp|backends|verify/driver|verify/reference)/.*\\.cpp$"
count=$(grep -cE "\"file\": \"${files%\$}\"" "$build/compile_commands.json" || true)
echo "tidy: $count files on $jobs jobs (about 5 CPU-minutes; the findings print at the end)"
SECONDS=0
run-clang-tidy -quiet -j "$jobs" -p "$build" "$files" >"$log" 2>&1 || true
took="${SECONDS} s, $jobs jobs"
# One line per finding, without the colour codes run-clang-tidy may add.
sed -E 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '(warning|error): .* \[[a-z0-9.,-]+\]$' | sort -u >"$log.findings" || true
if [ -s "$log.findings" ]; then
  cat "$log.findings"
  echo "tidy: findings by check:"
  sed -E 's/.*\[([a-z0-9.,-]+)\]$/\1/' "$log.findings" | sort | uniq -c | sort -rn
  echo "tidy: $(wc -l <"$log.findings") findings ($took)"
  rm -f "$log.findings"
  exit 1
fi
rm -f "$log.findings"
echo "tidy: clean ($took)"
