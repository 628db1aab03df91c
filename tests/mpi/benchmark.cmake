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

# The submission report on runs of a twin: compliant with its verification run joined,
# a forbidden change named, allowed changes listed as allowed, no verification =
# unverified; and the run's printed lines saying which run is which.
add_test(NAME benchmark_submission COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_submission.py
                                           $<TARGET_FILE:minictx> ${MPIEXEC_BIN} ${CMAKE_SOURCE_DIR}/inputs/benchmark)
set_tests_properties(benchmark_submission PROPERTIES PASS_REGULAR_EXPRESSION "submission ok" LABELS full
                                                     PROCESSORS 2 TIMEOUT 600)
