# `minictx bench`: a tiny grid end to end (HDF5 contents checked by check_bench.py), and
# its one-line errors. Timings are never asserted.
find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME bench_command COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_bench.py
                                    $<TARGET_FILE:minictx>)
set_tests_properties(bench_command PROPERTIES PASS_REGULAR_EXPRESSION "bench ok" TIMEOUT 120)
# On two ranks every rank measures the same rows at once (the load of a 2-rank run).
minictx_launch(_bench2 2 bench --seq 64 --head-dim 16 --mask causal --memory-seq 64 --layer-seq 64 --gemm-sizes 32
               --min-seconds 0)
add_test(NAME bench_two_ranks COMMAND ${_bench2})
set_tests_properties(bench_two_ranks PROPERTIES PASS_REGULAR_EXPRESSION "2 ranks measuring at once.*layer_step_causal"
                                                PROCESSORS 2 TIMEOUT 120)
minictx_error_test(bench_bad_mask 1 "--mask must be causal, full or both" bench --mask sideways)
minictx_error_test(bench_bad_seq 1 "--seq must be at least 1, got 0" bench --seq 0)
# A GEMM row's n × n matrices are sized without wrapping and checked against the memory.
minictx_error_test(bench_gemm_past_memory 1 "bench GEMM row at n=3000000000: its three 3000000000 x 3000000000 matrices need more than 8 EiB per rank"
                   bench --gemm-sizes 3000000000 --seq 64)
minictx_error_test(bench_bad_clock 1 "--clock must be wall or cpu" bench --clock sundial)
minictx_error_test(bench_bad_device 1 "--device must be kokkos or cuda, not 'abacus'" bench --device abacus)
minictx_error_test(bench_host_option_on_device 1 "--memory-seq applies to the host bench, not --device cuda" bench
                   --device cuda --memory-seq 64)
minictx_error_test(bench_device_option_on_host 1 "--dtype applies to --device cuda only" bench --dtype fp16)
add_test(NAME blas_kernels COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_blas_kernels.py
                                   $<TARGET_FILE:minictx>)
set_tests_properties(blas_kernels PROPERTIES PASS_REGULAR_EXPRESSION "blas kernels ok" SKIP_RETURN_CODE 77
                                             TIMEOUT 60)
