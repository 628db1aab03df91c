# Guards that cannot overflow, HDF5 faults, the watchdog and self-describing dumps
# (issue 16, part B).
find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)

# The memory estimate saturates instead of wrapping (F4), covers the attention tiles and
# caps them (F5), and guards the bench's rows (F9).
minictx_error_test(estimate_overflow 2 "memory estimate more than 8 EiB per rank exceeds" run --set run.mode=attention --set attention.backend=ring
                   --set sequence.batch=1000000 --set sequence.length=2000000000)
minictx_error_test(tile_cap 2 "attention.block_q = 2147483647 exceeds 65536" run --set attention.backend=ring
                   --set model.layers=1
                   --set model.d_model=64 --set model.heads=4 --set model.kv_heads=2 --set model.ffn_hidden=128
                   --set sequence.length=256 --set attention.block_q=2147483647 --set attention.block_k=2147483647)
# attention.kernels picks the cuda device's kernel family: on the host device, refused.
minictx_error_test(kernels_on_host 1 "attention.kernels sm90 picks the cuda device's flash kernels; run.device kokkos"
                   run --set attention.kernels=sm90)
# run.layer_kernels tuned picks the cuda device's layer kernels: on the host, refused on every rank.
minictx_error_test(layer_kernels_on_host 2 "run.layer_kernels tuned picks the cuda device's layer kernels; run.device kokkos"
                   run --set run.layer_kernels=tuned)
minictx_error_test(loss_scale_power_of_two 1 "run.loss_scale must be dynamic or a power of two of at least 1"
                   run --set run.loss_scale=1000)
# Attention mode has no loss to scale: a fixed scale is refused there, not ignored.
minictx_error_test(loss_scale_in_attention_mode 2 "run.loss_scale and run.initial_loss_scale scale the layer stack's loss"
                   run --set run.mode=attention --set attention.backend=ring --set run.loss_scale=1024)
# fp16 gradients that overflow at a fixed scale: the single point is refused in one line
# on every rank, by run and by verify (a sweep's is a skipped point: check_grad_sums.py).
set(_overflow --set run.mode=model --set model.preset=tiny --set model.layers=1 --set sequence.length=64
              --set attention.backend=ring --set run.dtype=fp16 --set machine.profile=generic-cpu
              --set machine.peak_tflops=1 --set run.loss_scale=1099511627776)
set(_overflow_line "the weight gradients overflow fp16 \\(Inf or NaN\\) at the fixed run.loss_scale 1099511627776")
minictx_error_test(fp16_overflow_at_fixed_loss_scale 2 "${_overflow_line}" run
                   -o ${CMAKE_CURRENT_BINARY_DIR}/fp16_overflow.h5 --force ${_overflow} --set run.warmup=0
                   --set run.iters=1)
minictx_error_test(fp16_overflow_at_fixed_loss_scale_verify 2 "${_overflow_line}" verify ${_overflow})
minictx_error_test(bench_memory_rows 1 "bench row at S=200000000, D=64: memory estimate .* exceeds" bench
                   --memory-seq 200000000)

# Ranks per node for the guard come from MPI, not the emulation key (F6); --dry-run says
# "would be refused here" (O2).
add_test(NAME guard_ranks_per_physical_node
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_guards.py ${MPIEXEC_BIN}
                 $<TARGET_FILE:minictx>)
set_tests_properties(guard_ranks_per_physical_node PROPERTIES PASS_REGULAR_EXPRESSION "guards ok"
                     PROCESSORS 4 TIMEOUT 180)

# The watchdog: a stopped rank ends the job within run.watchdog_seconds, with one line
# naming the waiting rank, its call, its peer and the point; the completed point resumes.
add_test(NAME watchdog_stopped_rank
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_watchdog.py $<TARGET_FILE:minictx>
                 ${MPIEXEC_BIN})
set_tests_properties(watchdog_stopped_rank PROPERTIES PASS_REGULAR_EXPRESSION "watchdog ok"
                     PROCESSORS 2 TIMEOUT 300)
# All or nothing: rank 1 fails at the device, at the comm's start and at a later point's
# first shift (the test seam MINICTX_INJECT_FAULT); every launch exits 2 within the limit
# with one line naming rank 1, the completed point kept.
add_test(NAME fault_injection
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_fault_injection.py $<TARGET_FILE:minictx>
                 ${MPIEXEC_BIN})
set_tests_properties(fault_injection PROPERTIES PASS_REGULAR_EXPRESSION "fault injection ok" LABELS quick
                     PROCESSORS 2 TIMEOUT 120)
# The agreement names the failure, not a wait for it (tests/unit/test_agree.cpp, 2 ranks).
add_test(NAME agree_two_ranks COMMAND ${MPIEXEC_BIN} -n 2 ${_mpiexec_preflags} $<TARGET_FILE:test_agree>)
set_tests_properties(agree_two_ranks PROPERTIES LABELS quick PROCESSORS 2 TIMEOUT 60)
minictx_error_test(watchdog_negative 2 "run.watchdog_seconds must be -1 \\(automatic\\), 0 \\(off\\) or seconds" run
                   --set attention.backend=ring --set run.watchdog_seconds=-0.5)

# HDF5 faults: a full disk is one error line, never a crash at exit (F10); a damaged
# results file never crashes or hangs the report, whose good points still print and
# resume (F12).
add_test(NAME hdf5_full_disk
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_full_disk.py ${MPIEXEC_BIN}
                 $<TARGET_FILE:minictx>)
set_tests_properties(hdf5_full_disk PROPERTIES PASS_REGULAR_EXPRESSION "full disk ok" SKIP_RETURN_CODE 77
                     PROCESSORS 2 TIMEOUT 300)
add_test(NAME hdf5_report_fuzz
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_report_fuzz.py $<TARGET_FILE:minictx> 120)
set_tests_properties(hdf5_report_fuzz PROPERTIES PASS_REGULAR_EXPRESSION "fuzz ok" TIMEOUT 900)
