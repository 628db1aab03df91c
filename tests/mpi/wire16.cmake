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
endforeach()
# fp16 gradients of 2 × 1000 tokens at head dim 128: with the loss unscaled (run.loss_scale
# 1), the softmax backward's gradients fall below fp16's smallest normal and dK misses its
# tolerance; the automatic scale keeps them in range.
minictx_verify_test(fp16_loss_scaled_model_p4 4 ${_model} --set run.dtype=fp16 --set model.heads=4
                    --set model.kv_heads=2 --set model.head_dim=128 --set sequence.batch=2
                    --set sequence.length=1000 --set attention.backend=ring)
