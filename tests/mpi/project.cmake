# `minictx project` against the run (miniapp/project/): projected bytes per link class
# equal the bytes a one-step run counts, and the projected memory is the run's estimate,
# for every backend and layout and the model under each checkpointing policy.
find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(_h5py_python)
  add_test(NAME project_bytes_and_memory_match_run
           COMMAND ${_h5py_python} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_projection_bytes.py ${MPIEXEC_BIN}
                   $<TARGET_FILE:minictx> ${CMAKE_SOURCE_DIR})
  set_tests_properties(project_bytes_and_memory_match_run PROPERTIES PROCESSORS 4 TIMEOUT 300)
endif()
minictx_error_test(project_no_world_size 1 "the deck has no topology.world_size: give the world size with --ranks N"
                   project ${CMAKE_SOURCE_DIR}/inputs/quickstart.yaml --machine a100-80gb-hdr)
minictx_error_test(project_profile_without_links 1 "no 'projection:' section"
                   project ${CMAKE_SOURCE_DIR}/inputs/quickstart.yaml --machine a100-80gb --ranks 2)
minictx_error_test(project_bad_backend_split 1 "ulysses_degree"
                   project ${CMAKE_SOURCE_DIR}/inputs/quickstart.yaml --machine a100-80gb-hdr --ranks 3
                   --set attention.backend=usp --set attention.ulysses_degree=2)

# `bench --comm` on 4 ranks as 2 emulated nodes measures both link classes and writes a
# calibration that `project --calibration` takes in place of the profile's links.
set(_comm_h5 ${CMAKE_CURRENT_BINARY_DIR}/project_comm_calibration.h5)
add_test(NAME project_bench_comm
         COMMAND ${MPIEXEC_BIN} -n 4 $<TARGET_FILE:minictx> bench --comm --ranks-per-node 2 --sizes 8,65536
                 --min-seconds 0 -o ${_comm_h5} --force)
set_tests_properties(project_bench_comm PROPERTIES FIXTURES_SETUP project_comm PROCESSORS 4
                     TIMEOUT 120 PASS_REGULAR_EXPRESSION "intra-node link: latency [0-9.]+ us.*inter-node link: latency")
add_test(NAME project_with_comm_calibration
         COMMAND $<TARGET_FILE:minictx> project ${CMAKE_SOURCE_DIR}/inputs/quickstart.yaml --machine generic-cpu
                 --ranks 4 --ranks-per-node 2 --set attention.backend=ring --calibration ${_comm_h5})
set_tests_properties(project_with_comm_calibration PROPERTIES FIXTURES_REQUIRED project_comm
                     TIMEOUT 60 PASS_REGULAR_EXPRESSION "point_0000")
minictx_error_test(project_bench_comm_one_rank 1 "bench --comm needs at least 2 ranks" bench --comm)
# A deck written for another world size: one line, on every rank.
minictx_error_test(run_world_size 2 "topology.world_size is 4 but this run has 2 ranks"
                   run --dry-run --set topology.world_size=4)

# A `minictx bench` file as a calibration: its GEMM rate becomes the peak and its
# attention rows the efficiencies.
set(_kernels_h5 ${CMAKE_CURRENT_BINARY_DIR}/project_kernel_calibration.h5)
add_test(NAME project_bench_kernels
         COMMAND $<TARGET_FILE:minictx> bench --seq 256,512 --head-dim 32 --mask causal --memory-seq 256
                 --layer-seq 128 --min-seconds 0 -o ${_kernels_h5} --force)
set_tests_properties(project_bench_kernels PROPERTIES FIXTURES_SETUP project_kernels TIMEOUT 120)
add_test(NAME project_with_kernel_calibration
         COMMAND $<TARGET_FILE:minictx> project ${CMAKE_SOURCE_DIR}/inputs/quickstart.yaml --machine generic-cpu
                 --ranks 2 --set attention.backend=ring --calibration ${_kernels_h5})
set_tests_properties(project_with_kernel_calibration PROPERTIES FIXTURES_REQUIRED project_kernels
                     TIMEOUT 60 PASS_REGULAR_EXPRESSION "point_0000 \\| [0-9.]+ \\| compute")

# tools/bench-torch-layer-gpu.py counts FLOPs as minictx does: its --print-flops against the
# model_tflop_per_step that `minictx project` writes for the same deck, inputs/gpu-layer.yaml.
if(_h5py_python)
  set(_layer_h5 ${CMAKE_CURRENT_BINARY_DIR}/project_gpu_layer.h5)
  add_test(NAME project_gpu_layer
           COMMAND $<TARGET_FILE:minictx> project ${CMAKE_SOURCE_DIR}/inputs/gpu-layer.yaml --machine h100-sxm-ndr
                   --ranks 1 -o ${_layer_h5} --force)
  set_tests_properties(project_gpu_layer PROPERTIES FIXTURES_SETUP project_gpu_layer TIMEOUT 60)
  add_test(NAME torch_layer_flops_match_minictx
           COMMAND ${_h5py_python} -c "import h5py, subprocess, sys
points = h5py.File(sys.argv[1], 'r')['points'].values()
want = {int(p['labels'].attrs['seq_len']): p['metrics'].attrs['model_tflop_per_step'] * 1e12 for p in points}
out = subprocess.run([sys.executable, sys.argv[2], '--print-flops', '--lengths', ','.join(map(str, want))],
                     capture_output=True, text=True, check=True).stdout.split()[1:]
got = {int(s): float(f) for s, f in (line.split(',') for line in out)}
print('torch script:', got, 'minictx:', want)
sys.exit(got.keys() != want.keys() or any(abs(got[s] - want[s]) > 1e-12 * want[s] for s in want))"
                   ${_layer_h5} ${CMAKE_SOURCE_DIR}/tools/bench-torch-layer-gpu.py)
  set_tests_properties(torch_layer_flops_match_minictx PROPERTIES FIXTURES_REQUIRED project_gpu_layer
                       TIMEOUT 60)
endif()

# `project` at 10^3 ... 10^9 ranks: the time per point in a table, under a second at 10^9.
add_test(NAME project_scales_to_a_billion_ranks
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_project_scale.py $<TARGET_FILE:minictx>
                 ${CMAKE_SOURCE_DIR})
set_tests_properties(project_scales_to_a_billion_ranks PROPERTIES PASS_REGULAR_EXPRESSION "project scale ok"
                     TIMEOUT 120)
