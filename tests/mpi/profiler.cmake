# Profiler regions and the trace. kokkos_tools_regions: one 4-rank launch of a zigzag ring
# under the tests' own Kokkos Tools library, whose regions must balance and carry the phase
# names of the results file (mpi/check_profiler_regions.py); that file is the fixture of
# report_trace, which validates `report --trace` against the Chrome trace format and the
# file's phase_seconds and draws it with outputs/plot.py (mpi/check_trace.py).
set(_timeline_h5 ${CMAKE_CURRENT_BINARY_DIR}/profiler/zigzag-4ranks.h5)
add_test(NAME kokkos_tools_regions
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_profiler_regions.py $<TARGET_FILE:minictx>
                 ${MPIEXEC_BIN} $<TARGET_FILE:minictx_region_recorder> ${_timeline_h5})
set_tests_properties(kokkos_tools_regions PROPERTIES PASS_REGULAR_EXPRESSION "regions ok" PROCESSORS 2 TIMEOUT 180
                                                     FIXTURES_SETUP zigzag_timeline)
add_test(NAME report_trace
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_trace.py $<TARGET_FILE:minictx>
                 ${_timeline_h5})
set_tests_properties(report_trace PROPERTIES PASS_REGULAR_EXPRESSION "trace ok" TIMEOUT 120
                                             FIXTURES_REQUIRED zigzag_timeline)
