# The job scripts in jobs/: Slurm for real (a one-node cluster the test starts; skipped
# when the Slurm programs are absent), on several hosts (below), PBS through the environment a PBS job sets, and
# the one-GPU-per-rank binding.
find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME batch_slurm_sbatch
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_slurm.py $<TARGET_FILE:minictx>
                 ${CMAKE_SOURCE_DIR})
set_tests_properties(batch_slurm_sbatch PROPERTIES PASS_REGULAR_EXPRESSION "slurm ok" SKIP_RETURN_CODE 77
                     PROCESSORS 2 TIMEOUT 600 RUN_SERIAL TRUE)
# Both MPI implementations across the hosts of a cluster in a box (network namespaces), and
# Slurm with one slurmd per host; skipped without root or ip netns. The default build checks
# MPICH, Slurm and, when the openmpi preset is built, Open MPI; the openmpi build checks
# Open MPI alone (ci/test.sh runs it there). MPICH's ranks cross the hosts by TCP with
# mpich_finalize_order preloaded (the order MPICH 4.2 gives MPI_Finalize; the file says why).
add_library(mpich_finalize_order MODULE ${CMAKE_CURRENT_SOURCE_DIR}/scripts/mpich_finalize_order.cpp)
target_link_libraries(mpich_finalize_order PRIVATE ${CMAKE_DL_LIBS})
if(MPIEXEC_BIN MATCHES "openmpi")
  set(_box_binaries --openmpi $<TARGET_FILE:minictx>)
else()
  set(_box_binaries --mpich $<TARGET_FILE:minictx> --mpich-finalize-order $<TARGET_FILE:mpich_finalize_order>
                    --openmpi ${CMAKE_SOURCE_DIR}/build-openmpi/miniapp/minictx)
endif()
add_test(NAME batch_cluster_box
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_cluster_box.py ${_box_binaries}
                 --source ${CMAKE_SOURCE_DIR})
set_tests_properties(batch_cluster_box PROPERTIES PASS_REGULAR_EXPRESSION "cluster box ok" SKIP_RETURN_CODE 77
                     PROCESSORS 2 TIMEOUT 300 RUN_SERIAL TRUE)
add_test(NAME batch_pbs_script
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_pbs.sh $<TARGET_FILE:minictx> ${CMAKE_SOURCE_DIR} ${MPIEXEC_BIN})
set_tests_properties(batch_pbs_script PROPERTIES PASS_REGULAR_EXPRESSION "pbs ok"
                     PROCESSORS 2 TIMEOUT 300)
add_test(NAME batch_bind_gpu_picks_the_local_rank
         COMMAND env CUDA_VISIBLE_DEVICES=4,5,6,7 SLURM_LOCALID=2 ${CMAKE_SOURCE_DIR}/jobs/bind-gpu.sh
                 printenv CUDA_VISIBLE_DEVICES)
set_tests_properties(batch_bind_gpu_picks_the_local_rank PROPERTIES PASS_REGULAR_EXPRESSION "^6\n$" LABELS quick)
add_test(NAME batch_bind_gpu_keeps_a_bound_gpu
         COMMAND env CUDA_VISIBLE_DEVICES=3 SLURM_LOCALID=1 ${CMAKE_SOURCE_DIR}/jobs/bind-gpu.sh
                 printenv CUDA_VISIBLE_DEVICES)
set_tests_properties(batch_bind_gpu_keeps_a_bound_gpu PROPERTIES PASS_REGULAR_EXPRESSION "^3\n$" LABELS quick)
