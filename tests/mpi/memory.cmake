# The per-rank memory estimate (model/memory_estimate.cpp, with device/device_footprint.cpp
# and backends/engine/buffer_estimate.cpp) against the peak each backend then allocates.
find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME memory_estimate_covers_peak
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_memory_estimate.py ${MPIEXEC_BIN}
                 $<TARGET_FILE:minictx>)
set_tests_properties(memory_estimate_covers_peak PROPERTIES PROCESSORS 4 TIMEOUT 300)
