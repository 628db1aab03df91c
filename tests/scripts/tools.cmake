# The tools beside minictx: the comparison scripts, ci/gpu-check.sh's stages, the JUBE
# definition and outputs/plot.py, each on fixtures or on a small real run.
find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
# The table that joins `minictx bench --device cuda` and the SDPA script (ci/gpu-check.sh), on fixtures.
add_test(NAME compare_attention_gpu
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_compare_attention_gpu.py
                 ${PROJECT_SOURCE_DIR}/tools/compare-attention-gpu.py)
set_tests_properties(compare_attention_gpu PROPERTIES PASS_REGULAR_EXPRESSION "compare attention ok"
                                                      LABELS quick TIMEOUT 60)
# ci/gpu-check.sh's acceptance, kernels, grid and layer stages against stand-ins for
# nvidia-smi, minictx, mpiexec, test_cuda_device and the SDPA and layer timers: the kernel
# families each runs, the joined tables, the probes first, failures reported (about 15 s:
# many short processes, hence not in `quick`).
add_test(NAME gpu_check_stages
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_gpu_check_stages.py ${PROJECT_SOURCE_DIR})
set_tests_properties(gpu_check_stages PROPERTIES PASS_REGULAR_EXPRESSION "gpu-check stages ok"
                                                 TIMEOUT 180)

# JUBE: the tiny twin through jube/minictx.xml on this machine, and `jube result`'s table.
add_test(NAME benchmark_jube COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_jube.py
                                     $<TARGET_FILE:minictx> ${MPIEXEC_BIN} ${CMAKE_SOURCE_DIR})
set_tests_properties(benchmark_jube PROPERTIES PASS_REGULAR_EXPRESSION "jube ok" SKIP_RETURN_CODE 77
                                               LABELS full TIMEOUT 600)

# Every h5py line of outputs/README.md on a file a run just wrote, and the bench recipe on
# the bench file of project_bench_kernels.
add_test(NAME outputs_readme_recipes
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_outputs_readme.py $<TARGET_FILE:minictx>
                 ${MPIEXEC_BIN} ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}/tests/project_kernel_calibration.h5)
set_tests_properties(outputs_readme_recipes PROPERTIES FIXTURES_REQUIRED project_kernels PASS_REGULAR_EXPRESSION
                     "outputs readme ok" LABELS full PROCESSORS 2 TIMEOUT 120)

# outputs/plot.py on a small real sweep (lines) and on burst-variant points (bars).
add_test(NAME plot_script
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_plot.py $<TARGET_FILE:minictx>
                 ${MPIEXEC_BIN} ${CMAKE_SOURCE_DIR})
set_tests_properties(plot_script PROPERTIES PASS_REGULAR_EXPRESSION "plot ok" PROCESSORS 2
                     TIMEOUT 300)

# The tools pass a signal on to the mpiexec, minictx, Spack or build they started and wait
# for it (tools/signals.bash; error_study stops one for real).
add_test(NAME tool_signals COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_tool_signals.py
                                   ${CMAKE_SOURCE_DIR})
set_tests_properties(tool_signals PROPERTIES PASS_REGULAR_EXPRESSION "tool signals ok" LABELS quick TIMEOUT 60)
# tools/bench-skipped-sweep.sh at its smallest, a sweep of one point (docs/performance.md).
add_test(NAME bench_skipped_sweep_one_point
         COMMAND ${CMAKE_SOURCE_DIR}/tools/bench-skipped-sweep.sh 1 $<TARGET_FILE:minictx>)
set_tests_properties(bench_skipped_sweep_one_point PROPERTIES PASS_REGULAR_EXPRESSION "^points=1 skipped=0 bytes="
                                                              LABELS quick TIMEOUT 60)

# fp32 attention at run.input_scale 128 within twice eager fp32 attention's error against
# fp64, random keys and tied logits (tools/compare-eager-attention.py; docs/numerics.md).
add_test(NAME eager_attention_fp32_large_logits
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_eager_attention.py ${MPIEXEC_BIN}
                 $<TARGET_FILE:minictx> ${CMAKE_SOURCE_DIR})
set_tests_properties(eager_attention_fp32_large_logits PROPERTIES PASS_REGULAR_EXPRESSION "eager attention ok"
                     PROCESSORS 2 TIMEOUT 120)
# tools/balance-table.sh at its smallest (2 ranks, one packing of 512 tokens): both layouts'
# rows in the table (docs/algorithms.md, "Document load balance").
add_test(NAME balance_table_smallest
         COMMAND env WORLDS=2 SEEDS=1 LENGTH=512 ITERS=1 MIN_DOC=8 MINICTX=$<TARGET_FILE:minictx> MPIEXEC=${MPIEXEC_BIN}
                 ${CMAKE_SOURCE_DIR}/tools/balance-table.sh ${CMAKE_CURRENT_BINARY_DIR}/balance-table)
set_tests_properties(balance_table_smallest PROPERTIES
                     PASS_REGULAR_EXPRESSION "\\| 2 \\| ring \\| zigzag \\| 512 .*\\| 2 \\| ring \\| balanced \\| 512 "
                     LABELS full PROCESSORS 2 TIMEOUT 120)
