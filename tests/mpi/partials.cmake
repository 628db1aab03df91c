# attention.partials storage: every block's output, and its gradient contributions, are
# rounded to the run's dtype before they join the sums, as a ring built on a kernel with
# 16-bit outputs does (accumulator: the running sums rounded after every block as well).
# Every backend's representative configurations stay within the dtype's tolerance of fp64
# on the layer stack, in bf16 and fp16; how far its error grows with the ring is the error
# study's (docs/numerics.md).
set(_model --set model.preset=tiny --set model.layers=2 --set sequence.length=130 --set sequence.batch=2
           --set attention.partials=storage)
foreach(_dtype bf16 fp16)
  set(_m ${_model} --set run.dtype=${_dtype})
  minictx_verify_each_config(partials_storage SUFFIX _${_dtype} QUICK local ring_basic_p4 ring_zigzag_p2 ring_stripe_p4
                             SETTINGS ${_m})
  # Beyond the configurations: a longer ring, and packed documents, whose blocks the mask
  # leaves whole are skipped, the others rounded.
  minictx_verify_test(partials_storage_ring_zigzag_p8_${_dtype} 8 ${_m} --set attention.backend=ring
                      --set attention.ring_type=zigzag)
  # accumulator: the running sums rounded after every block too, on the rings that merge
  # the most blocks (the zigzag ring at 8 ranks, Burst's Q-side backward).
  minictx_verify_test(partials_accumulator_ring_zigzag_p8_${_dtype} 8 ${_model} --set run.dtype=${_dtype}
                      --set attention.backend=ring --set attention.ring_type=zigzag --set attention.partials=accumulator)
  minictx_verify_test(partials_accumulator_burst_q_p4_n2_${_dtype} 4 ${_model} --set run.dtype=${_dtype}
                      --set attention.backend=burst --set topology.ranks_per_node=2 --set attention.ring_type=zigzag
                      --set attention.partials=accumulator)
  minictx_verify_test(partials_storage_documents_ring_zigzag_p4_${_dtype} 4 ${_m} --set attention.backend=ring
                      --set attention.ring_type=zigzag --set sequence.documents=[40,1,60,29])
endforeach()

# The error study's script, at its smallest (docs/numerics.md).
add_test(NAME error_study COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_error_study.py
                                  $<TARGET_FILE:minictx> ${MPIEXEC_BIN} ${CMAKE_SOURCE_DIR})
set_tests_properties(error_study PROPERTIES PASS_REGULAR_EXPRESSION "error study ok" LABELS "mpi;scripts"
                                            TIMEOUT 300)
