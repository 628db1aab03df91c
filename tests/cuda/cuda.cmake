# The NVIDIA path. In the default build: asking for it is one clear error. In the cuda
# build: the tests without label "gpu" run anywhere, their no-GPU errors skipped where a
# GPU answers; label "gpu" needs one GPU (ci/gpu-check.sh runs them) and is skipped without
# one, so that `ctest --preset cuda` passes on either machine: `minictx verify` of every
# backend's representative configurations (up to 4 ranks sharing the GPU: comm mpi, staged
# through the host) and of every backend on one rank, bf16 and fp16, and NCCL on one rank.
# The cuda device chooses its attention tiles: host tile sizes are refused, not ignored.
minictx_error_test(cuda_host_tiles 2 "attention.block_q/block_k are the host kernel's tiles" verify
                   --set run.device=cuda --set attention.block_k=128)
if(NOT MINICTX_ENABLE_CUDA)
  minictx_error_test(cuda_not_compiled 2 "device 'cuda' is not compiled into this build" verify
                     --set run.device=cuda --set attention.backend=ring)
  minictx_error_test(bench_cuda_not_compiled 1 "device 'cuda' is not compiled into this build" bench
                     --device cuda --seq 64)
  return()
endif()

minictx_error_test(cuda_no_gpu 2 "minictx: error: rank 0: device cuda: no usable GPU" verify
                   --set run.device=cuda --set attention.backend=ring)
set_property(TEST error_cuda_no_gpu PROPERTY SKIP_REGULAR_EXPRESSION "verify (model|attention) backend=")
minictx_error_test(bench_cuda_no_gpu 1 "minictx: error: rank 0: device cuda: no usable GPU" bench --device cuda
                   --seq 64 --head-dim 64)
set_property(TEST error_bench_cuda_no_gpu PROPERTY SKIP_REGULAR_EXPRESSION "minictx bench on CUDA GPU")
# `minictx bench --device cuda` on a tiny grid: its table, file and the comparison script.
add_test(NAME bench_cuda COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/cuda/check_bench_cuda.py
                                 $<TARGET_FILE:minictx> ${PROJECT_SOURCE_DIR}/tools/compare-attention-gpu.py)
set_tests_properties(bench_cuda PROPERTIES PASS_REGULAR_EXPRESSION "bench cuda ok" LABELS gpu TIMEOUT 120)
# The flash kernels hold tensor-core MMAs (PTX here, SASS too where cuobjdump is), the
# Hopper kernels wgmma on sm_90a: a regression to SIMT fails CI without a GPU. It also
# prints registers and spills per kernel.
set(_kernels ${PROJECT_SOURCE_DIR}/miniapp/device/cuda)
set(_archs "")
foreach(_arch ${CMAKE_CUDA_ARCHITECTURES})
  string(REGEX REPLACE "-.*" "" _arch ${_arch})
  list(APPEND _archs --arch ${_arch})
endforeach()
# The mma.sync kernels' spills as ptxas (CUDA 13.0) reports them (template arguments: ...,
# bf16, documents): D = 128's forward (its 32-query warps hold two m-tiles of O) and, on
# sm_90a, its dK/dV step; the documents twins (opt-in), which hold their rows' spans too:
# the forward at both head dims and D = 128's dQ pass. Any other spill fails.
set(_known_spills "")
foreach(_bf16 false true)
  list(APPEND _known_spills --known-spill "flash_fwd_kernel<128, 4, 32, 2, ${_bf16}, false>@80=60"
       --known-spill "flash_fwd_kernel<128, 4, 32, 2, ${_bf16}, false>@90a=28"
       --known-spill "flash_bwd_kernel<128, 8, 32, ${_bf16}, false>@90a=8"
       --known-spill "flash_fwd_kernel<128, 4, 32, 2, ${_bf16}, true>@80=88"
       --known-spill "flash_fwd_kernel<128, 4, 32, 2, ${_bf16}, true>@90a=76"
       --known-spill "flash_fwd_kernel<64, 4, 64, 2, ${_bf16}, true>@80=24"
       --known-spill "flash_fwd_kernel<64, 4, 64, 2, ${_bf16}, true>@90a=44"
       --known-spill "flash_bwd_dq_kernel<128, 4, 32, ${_bf16}, true>@80=24"
       --known-spill "flash_bwd_dq_kernel<128, 4, 32, ${_bf16}, true>@90a=12")
endforeach()
add_test(NAME flash_kernels_use_tensor_cores
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/cuda/check_tensor_cores.py --nvcc ${CMAKE_CUDA_COMPILER}
                 --include ${PROJECT_SOURCE_DIR}/miniapp ${_archs} --flash ${_kernels}/flash_fwd_sm80.cu
                 --flash ${_kernels}/flash_bwd_sm80.cu --wgmma ${_kernels}/flash_fwd_sm90.cu
                 --wgmma ${_kernels}/flash_bwd_sm90.cu --pipelined ${_kernels}/flash_fwd_sm90.cu
                 --wgmma ${_kernels}/flash_bwd_sm90_onepass.cu --one-pass ${_kernels}/flash_bwd_sm90_onepass.cu
                 --simt ${_kernels}/attention_simt.cu --simt ${_kernels}/tuned_layer_kernels.cu
                 --spill-free ${_kernels}/tuned_layer_kernels.cu ${_known_spills}
                 --document-twins ${_kernels}/flash_fwd_sm80.cu --document-twins ${_kernels}/flash_bwd_sm80.cu
                 --document-twins ${_kernels}/flash_fwd_sm90.cu --document-twins ${_kernels}/flash_bwd_sm90.cu
                 --work ${CMAKE_CURRENT_BINARY_DIR}/tensor_cores)
set_tests_properties(flash_kernels_use_tensor_cores PROPERTIES TIMEOUT 300
                     PASS_REGULAR_EXPRESSION "tensor cores ok")
# The ring timeline on the CUDA event clock: 4 ranks sharing the GPU (comm mpi, staged).
add_test(NAME ring_timeline_cuda
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_ring_timeline.py $<TARGET_FILE:minictx>
                 ${MPIEXEC_BIN} run.device=cuda run.dtype=bf16)
set_tests_properties(ring_timeline_cuda PROPERTIES PASS_REGULAR_EXPRESSION "ring timeline ok" LABELS gpu
                     TIMEOUT 300)
add_test(NAME cuda_listed COMMAND $<TARGET_FILE:minictx> list)
set_tests_properties(cuda_listed PROPERTIES TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "devices:\n  kokkos +[^\n]*\n  cuda +attention: flash kernels[^\n]*sm80: fwd flash-mma[^\n]*sm90: fwd flash-wgmma-tma[^\n]*sm90-onepass: fwd flash-wgmma-tma, bwd flash-wgmma-onepass \\(compute capability 9.0, build for 90a; opt-in, not yet run on a GPU\\)[^\n]*\ncomms:\n  mpi\n  nccl\n")

set(_model --set model.preset=tiny --set model.layers=2 --set sequence.length=1000)
# Packed documents, which the kernels take as per-document sub-blocks
# (device/document_blocks.hpp), on the flash kernels at both head dims: documents that
# zigzag chunks and stripe rows cut, one-token documents, batch rows with different
# packings (run row by row); 1000 tokens, which no tile divides.
set(_docs --set model.preset=tiny --set model.layers=2 --set model.heads=4 --set model.kv_heads=2
          --set sequence.length=1000)
set(_d64 ${_docs} --set model.head_dim=64)
set(_d128 ${_docs} --set model.head_dim=128)
set(_cut --set sequence.documents=[137,1,400,263,1,198])
set(_ones --set sequence.documents=[1,1,500,1,497])
set(_rows --set sequence.batch=2 --set "sequence.documents={\"rows\":[[420,580],[1,998,1]]}")
foreach(_dtype bf16 fp16)
  set(_dt --set run.dtype=${_dtype})
  # Every backend's representative configurations, and every backend on one rank.
  minictx_verify_each_config(cuda GPU SUFFIX _${_dtype} SETTINGS ${_dt} ${_model})
  minictx_verify_each_backend(cuda_1_${_dtype} 1 GPU ${_dt} ${_model})
  minictx_verify_test(cuda_local_single_device_${_dtype} 1 GPU ${_dt} ${_model} --reference single-device)
  minictx_verify_test(cuda_local_attention_full_${_dtype} 1 GPU ${_dt} --set run.mode=attention
                          --set attention.causal=false --set sequence.length=777)
  minictx_verify_test(cuda_nccl_ring_1_${_dtype} 1 GPU ${_dt} ${_model} --set attention.backend=ring
                          --set run.comm=nccl)
  # The tiny preset's head dim (32) takes the SIMT kernels; these layers take the flash
  # kernels, which read 16-bit blocks in place: whole tensors, packed zigzag parts and row
  # copies, and dO sent with Q (Burst's q traffic).
  minictx_verify_test(cuda_flash_ring_zigzag_4_${_dtype} 4 GPU ${_dt} ${_model} --set model.heads=4
                          --set model.kv_heads=2 --set model.head_dim=64 --set attention.backend=ring
                          --set attention.ring_type=zigzag)
  minictx_verify_test(cuda_flash_burst_q_4_${_dtype} 4 GPU ${_dt} ${_model} --set model.heads=2
                          --set model.kv_heads=1 --set model.head_dim=128 --set attention.backend=burst
                          --set attention.bwd_comm=q --set topology.ranks_per_node=2
                          --set attention.ring_type=zigzag)
  # attention.partials storage on the flash kernels: each block's output and gradient
  # contributions rounded to the dtype before the ring's sums (the kernel tests'
  # CudaAttentionPartials check the rounding itself).
  minictx_verify_test(cuda_partials_storage_ring_zigzag_4_${_dtype} 4 GPU ${_dt} ${_model} --set model.heads=4
                          --set model.kv_heads=2 --set model.head_dim=64 --set attention.backend=ring
                          --set attention.ring_type=zigzag --set attention.partials=storage)
  minictx_verify_test(cuda_partials_storage_usp_2x2_${_dtype} 4 GPU ${_dt} ${_model} --set model.heads=4
                          --set model.kv_heads=2 --set model.head_dim=128 --set attention.backend=usp
                          --set attention.ulysses_degree=2 --set attention.ring_type=stripe
                          --set attention.partials=storage)
  # Documents: every configuration with batch rows packed differently, and the other
  # packings at the other head dim.
  minictx_verify_each_config(cuda_documents GPU SUFFIX _${_dtype} SETTINGS ${_dt} ${_d64} ${_rows})
  minictx_verify_test(cuda_documents_local_1_${_dtype} 1 GPU ${_dt} ${_d128} ${_rows})
  minictx_verify_test(cuda_documents_ring_zigzag_4_${_dtype} 4 GPU ${_dt} ${_d64} ${_cut}
                          --set attention.backend=ring --set attention.ring_type=zigzag)
  minictx_verify_test(cuda_documents_ring_stripe_4_${_dtype} 4 GPU ${_dt} ${_d128} ${_ones}
                          --set attention.backend=ring --set attention.ring_type=stripe)
  minictx_verify_test(cuda_documents_usp_2x2_d128_${_dtype} 4 GPU ${_dt} ${_d128} ${_cut} --set attention.backend=usp
                          --set attention.ulysses_degree=2 --set attention.ring_type=zigzag)
  minictx_verify_test(cuda_documents_burst_q_4_${_dtype} 4 GPU ${_dt} ${_d128} ${_cut} --set attention.backend=burst
                          --set attention.bwd_comm=q --set topology.ranks_per_node=2 --set attention.ring_type=zigzag)
endforeach()

# The opt-in kernels, not yet proven on a GPU, in launches of their own: a kernel that
# fails or never ends on first contact neither takes the proven cases' launch with it nor
# holds a GPU session's test stage for long.
minictx_flush_verify_tests(cuda)
foreach(_dtype bf16 fp16)
  set(_dt --set run.dtype=${_dtype})
  # The tuned layer kernels (run.layer_kernels tuned, opt-in): the layer stack at D = 128
  # on a zigzag ring, and with packed documents, whose RoPE positions restart in each
  # document (the position cache finds each shard's arrays by content).
  minictx_verify_test(cuda_tuned_layer_ring_zigzag_4_${_dtype} 4 GPU ${_dt} ${_model} --set model.heads=4
                          --set model.kv_heads=2 --set model.head_dim=128 --set attention.backend=ring
                          --set attention.ring_type=zigzag --set run.layer_kernels=tuned)
  minictx_verify_test(cuda_tuned_layer_documents_ring_stripe_4_${_dtype} 4 GPU ${_dt} ${_d128} ${_cut}
                          --set attention.backend=ring --set attention.ring_type=stripe
                          --set run.layer_kernels=tuned)
  # The same with the document mask inside the flash kernels (attention.kernels
  # sm80-documents, opt-in): rows with different packings in one call, one-token documents.
  minictx_verify_test(cuda_documents_in_kernels_ring_zigzag_4_${_dtype} 4 GPU ${_dt} ${_d64} ${_rows}
                          --set attention.backend=ring --set attention.ring_type=zigzag
                          --set attention.kernels=sm80-documents)
  minictx_verify_test(cuda_documents_in_kernels_ulysses_4_${_dtype} 4 GPU ${_dt} ${_d128} ${_ones}
                          --set attention.backend=ulysses --set attention.kernels=sm80-documents)
  # The one-pass backward (attention.kernels sm90-onepass, opt-in; Hopper only) on the
  # layer stack at head dim 128: GQA, zigzag shards with padding (1000 tokens), dQ added
  # over the ring's key blocks.
  minictx_verify_test(cuda_sm90_onepass_ring_zigzag_4_${_dtype} 4 GPU ${_dt} ${_model} --set model.heads=4
                          --set model.kv_heads=2 --set model.head_dim=128 --set attention.backend=ring
                          --set attention.ring_type=zigzag --set attention.kernels=sm90-onepass)
endforeach()
minictx_flush_verify_tests(cuda_opt_in)
set_tests_properties(verify_cuda_opt_in_p4_gpu PROPERTIES TIMEOUT 150)

# Every point of those launches on the cuda device (no GPU needed: it reads the test list).
add_test(NAME gpu_verify_points_on_cuda
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/cuda/check_gpu_points.py ${CMAKE_CTEST_COMMAND}
                 ${CMAKE_BINARY_DIR})
set_tests_properties(gpu_verify_points_on_cuda PROPERTIES PASS_REGULAR_EXPRESSION "gpu points ok" TIMEOUT 60)

# The memory estimate covers what a CUDA run holds (tensors, cuBLASLt's workspace and
# conversion buffers, the attention operands' copies), 4 ranks sharing the GPU.
add_test(NAME memory_estimate_covers_peak_cuda
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_memory_estimate.py ${MPIEXEC_BIN}
                 $<TARGET_FILE:minictx> --set run.device=cuda)
set_tests_properties(memory_estimate_covers_peak_cuda PROPERTIES LABELS gpu TIMEOUT 300
                     PASS_REGULAR_EXPRESSION "estimates cover the peaks")

# Two ranks on a machine with one GPU: NCCL refuses, in one line naming both ranks and
# the GPU's PCI bus id.
minictx_error_test(cuda_nccl_shared_gpu 2
                   "comm nccl needs a GPU of its own per rank, but ranks 0 and 1 both use GPU [0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+[.][0-9A-Fa-f] on "
                   verify --set run.device=cuda --set run.comm=nccl --set attention.backend=ring)
set_property(TEST error_cuda_nccl_shared_gpu APPEND PROPERTY LABELS gpu)
