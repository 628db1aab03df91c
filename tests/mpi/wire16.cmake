# Runs in bf16 and fp16 on the host: ring blocks, gradient accumulators, head exchanges
# and all-gathers travel in 16 bits (rounded once per hop, summed in fp32 between hops),
# softmax statistics in fp32. Every backend's representative configurations against the
# fp64 reference at the dtype's tolerance; the bytes they send are checked beside their
# fp32 counts in the backends' own suites (*_bf16).
set(_att --set run.mode=attention)
set(_model --set model.preset=tiny --set model.layers=2)
foreach(_dtype bf16 fp16)
  set(_dt --set run.dtype=${_dtype})
  minictx_verify_each_config(wire16 SUFFIX _${_dtype} QUICK ring_zigzag_p2 ulysses_p2 SETTINGS ${_att} ${_dt}
                             --set sequence.length=999)
  # Beyond the configurations: an all-gather of uneven shares, KV heads replicated by the
  # head exchange, the model stack's gradient sums.
  minictx_verify_test(wire16_allgather_p3_${_dtype} 3 ${_att} ${_dt} --set attention.backend=allgather
                      --set sequence.length=333)
  minictx_verify_test(wire16_ulysses_p4_kv_replicated_${_dtype} 4 ${_att} ${_dt} --set attention.backend=ulysses
                      --set model.kv_heads=2 --set sequence.length=998)
  minictx_verify_test(wire16_ring_model_p4_${_dtype} 4 ${_model} ${_dt} --set attention.backend=ring
                      --set attention.ring_type=zigzag --set sequence.length=201 --set sequence.batch=2)
  # run.grad_reduce_dtype on every backend at 4 ranks: storage keeps the weight gradients,
  # and their sums, in 16 bits (the default, fp32 main gradients, is every other model case
  # here and in partials.cmake; allgather at 4 ranks has both here).
  set(_m ${_model} ${_dt} --set sequence.length=130 --set sequence.batch=2)
  set(_g --set run.grad_reduce_dtype=storage)
  minictx_verify_test(wire16_ring_zigzag_model_p4_storage_grads_${_dtype} 4 ${_m} ${_g}
                      --set attention.backend=ring --set attention.ring_type=zigzag)
  minictx_verify_test(wire16_ulysses_model_p4_storage_grads_${_dtype} 4 ${_m} ${_g} --set attention.backend=ulysses)
  foreach(_grads fp32 storage)
    minictx_verify_test(wire16_allgather_model_p4_${_grads}_grads_${_dtype} 4 ${_m}
                        --set run.grad_reduce_dtype=${_grads} --set attention.backend=allgather)
  endforeach()
  minictx_verify_test(wire16_usp_2x2_model_storage_grads_${_dtype} 4 ${_m} ${_g} --set attention.backend=usp
                      --set attention.ulysses_degree=2 --set attention.ring_type=zigzag)
  minictx_verify_test(wire16_double_ring_model_p4_w2_storage_grads_${_dtype} 4 ${_m} ${_g}
                      --set attention.backend=double_ring --set attention.window_size=2
                      --set topology.ranks_per_node=2 --set attention.ring_type=zigzag)
  foreach(_bwd q kv)
    minictx_verify_test(wire16_burst_${_bwd}_model_p4_n2_storage_grads_${_dtype} 4 ${_m} ${_g}
                        --set attention.backend=burst --set attention.bwd_comm=${_bwd}
                        --set topology.ranks_per_node=2 --set attention.ring_type=zigzag)
  endforeach()
endforeach()
# fp16 gradients of 2 × 1000 tokens at head dim 128: with the loss unscaled (run.loss_scale
# 1), the softmax backward's gradients fall below fp16's smallest normal and dK misses its
# tolerance; the dynamic scale keeps them in range.
minictx_verify_test(fp16_loss_scaled_model_p4 4 ${_model} --set run.dtype=fp16 --set model.heads=4
                    --set model.kv_heads=2 --set model.head_dim=128 --set sequence.batch=2
                    --set sequence.length=1000 --set attention.backend=ring)

# The weight-gradient sums in fp32 and in 16 bits and fp16's loss scale at 4 ranks, one
# sweep: bytes by the all-reduce formula, every weight gradient nearer one device and fp64
# with fp32 sums, a dynamic scale that overflows halved until VALID, a fixed one refused.
if(_h5py_python)
  add_test(NAME grad_sums_and_loss_scale_p4
           COMMAND ${_h5py_python} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_grad_sums.py ${MPIEXEC_BIN}
                   $<TARGET_FILE:minictx>)
  set_tests_properties(grad_sums_and_loss_scale_p4 PROPERTIES PASS_REGULAR_EXPRESSION "gradient sums ok"
                       PROCESSORS 4 TIMEOUT 300)
endif()
