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

# Bytes sent per rank in one step, from the results file. Needs a Python with h5py
# (Debian's python3-h5py lives in /usr/bin); the bytes_* checks are skipped without one.
set(_h5py_python "")
foreach(_py /usr/bin/python3 python3)
  execute_process(COMMAND ${_py} -c "import h5py" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  if(_rc EQUAL 0)
    set(_h5py_python ${_py})
    break()
  endif()
endforeach()
if(NOT _h5py_python)
  message(STATUS "no Python with h5py: the bytes_* checks are skipped")
endif()

# minictx_bytes_test(NAME RANKS INTRA INTER --set k=v ...): one timed iteration, then
# every rank's intra- and inter-node byte counts must equal INTRA and INTER (one value
# for every rank, or a comma-separated value per rank).
function(minictx_bytes_test name ranks intra inter)
  if(NOT _h5py_python)
    return()
  endif()
  set(_h5 ${CMAKE_CURRENT_BINARY_DIR}/bytes_${name}.h5)
  add_test(NAME bytes_${name}_run
           COMMAND ${MPIEXEC_BIN} -n ${ranks} $<TARGET_FILE:minictx> run --force -o ${_h5} --set run.mode=attention
                   --set run.warmup=0 --set run.iters=1 ${ARGN})
  set_tests_properties(bytes_${name}_run PROPERTIES FIXTURES_SETUP bytes_${name} LABELS "mpi;bytes"
                       PROCESSORS ${ranks} TIMEOUT 120)
  add_test(NAME bytes_${name}
           COMMAND ${_h5py_python} -c "import h5py, sys
p = h5py.File(sys.argv[1], 'r')['points/point_0000']
got = [list(p['bytes_sent_intra'][:]), list(p['bytes_sent_inter'][:])]
want = [[float(x) for x in arg.split(',')] for arg in sys.argv[2:]]
want = [w * len(g) if len(w) == 1 else w for w, g in zip(want, got)]
print('intra, inter per rank:', got, 'expected:', want)
sys.exit(got != want)" ${_h5} ${intra} ${inter})
  set_tests_properties(bytes_${name} PROPERTIES FIXTURES_REQUIRED bytes_${name} LABELS "mpi;bytes" TIMEOUT 60)
endfunction()

file(GLOB _mpi_suites CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/mpi_*.cmake)
foreach(_suite ${_mpi_suites})
  include(${_suite})
endforeach()
