# Sweeps end to end: a sweep stopped by SIGTERM (to mpiexec, or to one rank only) or by
# SIGKILL leaves every completed point readable, and --resume finishes it.
find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
foreach(_mode term-mpiexec term-one-rank kill)
  add_test(NAME sweep_interrupt_${_mode}
           COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_interrupt.py
                   $<TARGET_FILE:minictx> ${MPIEXEC_BIN} ${_mode})
  set_tests_properties(sweep_interrupt_${_mode} PROPERTIES PASS_REGULAR_EXPRESSION "interrupt ok"
                       LABELS "mpi;sweep" PROCESSORS 2 TIMEOUT 600)
endforeach()
