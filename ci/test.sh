#!/usr/bin/env bash
# The test command (CI runs it through .ci/run). Each step says what it starts and how
# long it took, and a table of the step times ends the run:
#   setup    ci/setup-deps.sh: the Debian packages (a no-op when they are present);
#   format   ci/format-check.sh: clang-format;
#   openmpi  the Open MPI build (preset openmpi), first, so that the default suite's
#            batch_cluster_box runs Open MPI across hosts beside MPICH and Slurm; its
#            quick label runs after the debug step;
#   default  the Release build (preset default): every test, labels quick and full;
#   tidy     ci/tidy.py over the default build's compile database: no finding; it runs
#            in the background at the lowest priority from the default build on, on the
#            cycles the test suites leave idle, and is waited for at the end;
#   debug    AddressSanitizer and UBSan (preset debug): the quick label;
#   cuda     where the CUDA toolkit is installed, the cuda preset (compile and link) and
#            its tests that need no GPU (label cuda, not gpu).
# The release builds treat warnings as errors. The builds go through ccache when it is
# installed, with ccache's own cache (~/.cache/ccache unless its configuration or
# CCACHE_DIR names another), which outlives the clone: where the machine keeps it, a run
# compiles only what changed since the last one. Paths are taken relative to the clone
# (CCACHE_BASEDIR), so that clones at other paths and the presets share the objects that
# do not differ between them. clang-tidy keeps a cache of clean results the same way.
# The run's times end as one CSV row in the columns of docs/data/ci-run-times.csv, the
# history of CI run times, to which MINICTX_CI_TIMES=FILE appends it.
# Usage: ci/test.sh [extra ctest arguments for the default suite]
# Environment: STEPS (default "format default tidy debug openmpi cuda": the steps to run),
#              CUDA=0 (skip the cuda build), NVCC (default /usr/local/cuda/bin/nvcc),
#              MINICTX_CI_TIMES (a CSV file the row is appended to), CI_NOTE (its note).
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${STEPS:-format default tidy debug openmpi cuda}
# The cores, not OMP_NUM_THREADS (nproc obeys it, and the ranks below run with 1).
jobs=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
# One thread per rank: ranks, not threads, fill the cores.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

times=()
declare -A seconds_of  # by step name, for the CSV row
started=$SECONDS
load=$(cut -d' ' -f1 /proc/loadavg)
# The row of docs/data/ci-run-times.csv: date, load average at the start, default tests,
# total and the steps' seconds; the note says what failed.
csv_row() {
  local tests=""
  [ -f build/CTestTestfile.cmake ] && tests=$(ctest --preset default -N 2>/dev/null | sed -n 's/^Total Tests: //p')
  printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,"%s"\n' "$(date -u +%F)" "$load" "$tests" "$((SECONDS - started))" \
    "${seconds_of[default tests]:-}" "${seconds_of[tidy]:-}" "${seconds_of[debug tests]:-}" \
    "${seconds_of[openmpi tests]:-}" "${seconds_of[cuda tests]:-}" "${seconds_of[openmpi build]:-}" \
    "${seconds_of[debug build]:-}" "${seconds_of[cuda build]:-}" "${1:-${CI_NOTE:-}}"
}
summary() {
  echo "test.sh: step times"
  printf '  %s\n' "${times[@]}"
  echo "test.sh: total $((SECONDS - started)) s"
  local row
  row=$(csv_row "$@")
  echo "test.sh: as a row of docs/data/ci-run-times.csv: $row"
  if [ -n "${MINICTX_CI_TIMES:-}" ]; then echo "$row" >>"$MINICTX_CI_TIMES"; fi
}
# run NAME COMMAND...: one announced, timed step; a failure ends the run with the table.
run() {
  local name=$1 start=$SECONDS
  shift
  echo "test.sh: [$name] $*"
  if "$@"; then
    times+=("$(printf '%-18s %5d s' "$name" $((SECONDS - start)))")
    seconds_of[$name]=$((SECONDS - start))
    echo "test.sh: [$name] done in $((SECONDS - start)) s"
  else
    local rc=$?
    times+=("$(printf '%-18s %5d s  FAILED (exit %d)' "$name" $((SECONDS - start)) "$rc")")
    summary "failed at $name (exit $rc)"
    exit "$rc"
  fi
}
step() { [[ " $steps " == *" $1 "* ]]; }

if command -v ccache >/dev/null && [ -z "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ]; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
fi

# build PRESET [cmake options]: configure and build, two steps.
build() {
  run "$1 configure" cmake --preset "$1" "${@:2}"
  run "$1 build" cmake --build --preset "$1" -j "$jobs"
}

run setup ci/setup-deps.sh
if step format; then run format ci/format-check.sh; fi
if step openmpi; then build openmpi -DMINICTX_WERROR=ON; fi
if step default; then build default -DMINICTX_WERROR=ON; fi
# Over the default step's compile database (build/). The test suites leave much of the
# machine idle (launchers starting and tearing down, one-rank tests, scripts that wait),
# and nice 19 gives way to everything else: clang-tidy takes those cycles, in a session of
# its own so that an early end of this script ends it too. Its output prints at the end.
if step tidy; then
  tidy_log=$(mktemp)
  echo "test.sh: [tidy] ci/tidy.py build, in the background at nice 19"
  # The last line of its log: how long it ran (the inner shell's $SECONDS), for the table.
  # shellcheck disable=SC2016
  setsid nice -n 19 bash -c 'ci/tidy.py build; rc=$?; echo "ended $SECONDS"; exit $rc' >"$tidy_log" 2>&1 &
  tidy_pid=$!
  trap 'kill -- -"$tidy_pid" 2>/dev/null || true; rm -f "$tidy_log"' EXIT
fi
# The wait for the background tidy, its output and how long it ran.
finish_tidy() {
  local rc=0
  wait "$tidy_pid" || rc=$?
  sed '$d' "$tidy_log"
  seconds_of[tidy]=$(tail -1 "$tidy_log" | cut -d' ' -f2)
  times+=("$(printf '%-18s %5d s  in the background' "tidy" "${seconds_of[tidy]}")")
  return "$rc"
}
if step default; then run "default tests" ctest --preset default -j "$jobs" "$@"; fi
if step debug; then
  # Not -Werror: GCC's flow warnings misfire on sanitizer-instrumented code.
  build debug
  run "debug tests" ctest --preset debug -j "$jobs" -L '^quick$'
fi
if step openmpi; then
  run "openmpi tests" ctest --preset openmpi -j "$jobs" -L '^quick$'
  # Across hosts: in the default suite when it ran (above), else here.
  if ! step default; then run "openmpi hosts" ctest --preset openmpi -R '^batch_cluster_box$'; fi
fi

nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
if ! step cuda || [ "${CUDA:-1}" = 0 ]; then
  echo "test.sh: the cuda preset is not built (not asked for)"
elif [ -x "$nvcc" ]; then
  export CUDACXX=$nvcc
  build cuda -DMINICTX_WERROR=ON
  run "cuda tests" ctest --preset cuda -j "$jobs" -L '^cuda$' -LE '^gpu$'
else
  echo "test.sh: no CUDA toolkit at $nvcc: the cuda preset is not built"
fi
if step tidy; then run "tidy (the rest)" finish_tidy; fi
summary
