# Sweeps end to end: a sweep stopped by SIGTERM (to mpiexec, or to one rank only) or by
# SIGKILL leaves every completed point readable, and --resume finishes it.
find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
foreach(_mode term-mpiexec term-one-rank kill)
  add_test(NAME sweep_interrupt_${_mode}
           COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_interrupt.py
                   $<TARGET_FILE:minictx> ${MPIEXEC_BIN} ${_mode})
  set_tests_properties(sweep_interrupt_${_mode} PROPERTIES PASS_REGULAR_EXPRESSION "interrupt ok"
                       PROCESSORS 2 TIMEOUT 600)
endforeach()

# run --dry-run: a sweep lists its skipped points with the reason; a single point that
# cannot run at the given scale is an error, as in a real run.
add_test(NAME sweep_dry_run_lists_skips
         COMMAND $<TARGET_FILE:minictx> run --dry-run --ranks 2 --set attention.backend=[ring,local]
                 --set run.mode=attention)
set_tests_properties(sweep_dry_run_lists_skips PROPERTIES
                     PASS_REGULAR_EXPRESSION "point_0001 attention.backend=local: skipped: .*dry run: 2 points, 1 run on 2 ranks, 1 skipped"
                     LABELS quick TIMEOUT 60)
minictx_error_test(dry_run_single_point 1 "attention.backend local runs on 1 rank" run --dry-run --ranks 2)
