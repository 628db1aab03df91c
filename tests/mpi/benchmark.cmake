# The benchmark: --version and the provenance a submission's system description comes
# from; the size classes (inputs/benchmark/) at their rank counts; their host twins; the
# submission report's verdicts.
add_test(NAME provenance_version COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_provenance.py
                                         $<TARGET_FILE:minictx> ${PROJECT_VERSION}
                                         $<IF:$<BOOL:${MINICTX_ENABLE_CUDA}>,cuda,host>)
set_tests_properties(provenance_version PROPERTIES PASS_REGULAR_EXPRESSION "provenance ok" LABELS quick TIMEOUT 60)

# Every class deck and twin at its own rank count; the GPU classes fit 80 GB devices.
file(GLOB _class_decks CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/inputs/benchmark/*.yaml)
foreach(_deck ${_class_decks})
  get_filename_component(_name ${_deck} NAME_WE)
  add_test(NAME benchmark_class_${_name}
           COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_benchmark_class.py
                   $<TARGET_FILE:minictx> ${_deck})
  set_tests_properties(benchmark_class_${_name} PROPERTIES PASS_REGULAR_EXPRESSION "class ok"
                                                         LABELS quick TIMEOUT 60)
endforeach()

# The submission report and tools/check-submission.py, on honest runs of the tiny class's
# host twin made once (benchmark_submission_runs: three launches, their verification runs,
# deviations, a projection) and on copies of them tampered with h5py; the two tools agree
# on every case (tests/mpi/check_submission*.py).
set(_submission_runs ${CMAKE_CURRENT_BINARY_DIR}/submission_runs)
add_test(NAME benchmark_submission_runs
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/make_submission_runs.py $<TARGET_FILE:minictx>
                 ${MPIEXEC_BIN} ${CMAKE_SOURCE_DIR}/inputs/benchmark ${_submission_runs})
set_tests_properties(benchmark_submission_runs PROPERTIES FIXTURES_SETUP submission_runs
                     PASS_REGULAR_EXPRESSION "submission runs ok" LABELS full PROCESSORS 2 TIMEOUT 600)
foreach(_check submission submission_tampered)
  add_test(NAME benchmark_${_check}
           COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_${_check}.py $<TARGET_FILE:minictx>
                   ${_submission_runs})
  set_tests_properties(benchmark_${_check} PROPERTIES FIXTURES_REQUIRED submission_runs
                       PASS_REGULAR_EXPRESSION "submission ok|tampered submissions ok" LABELS full TIMEOUT 300)
endforeach()
