# MPI suites: `minictx verify` and `minictx run` under mpiexec, on 1 to 8 ranks (MPICH
# oversubscribes a 2-core machine fine). Each backend adds its cases in
# tests/mpi_<backend>.cmake with minictx_verify_test().
find_program(MPIEXEC_BIN NAMES mpiexec.mpich mpiexec REQUIRED)

# minictx_verify_test(NAME RANKS [--set k=v ...] [--reference single-device]):
# passes when every rank exits 0 and rank 0 prints VALID.
function(minictx_verify_test name ranks)
  add_test(NAME verify_${name}
           COMMAND ${MPIEXEC_BIN} -n ${ranks} $<TARGET_FILE:minictx> verify ${ARGN})
  set_tests_properties(verify_${name} PROPERTIES
                       PASS_REGULAR_EXPRESSION "\nVALID\n" FAIL_REGULAR_EXPRESSION "INVALID|error"
                       LABELS "mpi;verify" PROCESSORS ${ranks} TIMEOUT 300)
endfunction()

# A deck error must give one line and a non-zero exit on every rank, never a hang.
function(minictx_error_test name ranks expected)
  add_test(NAME error_${name}
           COMMAND ${MPIEXEC_BIN} -n ${ranks} $<TARGET_FILE:minictx> ${ARGN})
  set_tests_properties(error_${name} PROPERTIES WILL_FAIL TRUE LABELS "mpi;errors" TIMEOUT 60)
  add_test(NAME error_${name}_message
           COMMAND ${MPIEXEC_BIN} -n ${ranks} $<TARGET_FILE:minictx> ${ARGN})
  set_tests_properties(error_${name}_message PROPERTIES PASS_REGULAR_EXPRESSION "${expected}"
                       LABELS "mpi;errors" TIMEOUT 60)
endfunction()

file(GLOB _mpi_suites CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/mpi_*.cmake)
foreach(_suite ${_mpi_suites})
  include(${_suite})
endforeach()
