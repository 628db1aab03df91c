# run.ring_timeline: the recorded ring steps and outer-ring transfers of ring, double_ring and
# burst on 4 ranks, and the empty group of a backend without a ring
# (mpi/check_ring_timeline.py).
find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME ring_timeline_records
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_ring_timeline.py $<TARGET_FILE:minictx>
                 ${MPIEXEC_BIN})
set_tests_properties(ring_timeline_records PROPERTIES PASS_REGULAR_EXPRESSION "ring timeline ok"
                     PROCESSORS 2 TIMEOUT 300)
