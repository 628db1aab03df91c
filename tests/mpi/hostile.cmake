# Hostile numerics: inputs scaled by run.input_scale make attention logits large, so the
# softmax, its exponentials and the LSE merge meet differences far beyond the range of
# fp32's exp (about 88). Every backend against fp64, where a NaN or Inf anywhere fails
# the case: fp32 and bf16 at scale 128 (the logits of a row spread over about 3·10⁴, up
# to 4.7·10⁴, and LSEs reach 2.5·10⁴), each at its dtype's tolerance; fp32 holds it because
# the host device rebuilds P from an LSE kept in two parts (docs/algorithms.md, "The LSE in
# two parts").
set(_att --set run.mode=attention --set sequence.length=255)
set(_fp32 --set run.dtype=fp32 --set run.input_scale=128)
set(_bf16 --set run.dtype=bf16 --set run.input_scale=128)
# Large logits that tie: the keys take 4 directions shared by the sequence
# (run.key_directions), so a row's largest logit is shared by every visible key of its best
# direction (tens of them) instead of owning the row, and the LSE is the max plus the log
# of their count.
set(_fp32_ties ${_fp32} --set run.key_directions=4)
set(_bf16_ties ${_bf16} --set run.key_directions=4)
set(_zigzag --set attention.ring_type=zigzag)
foreach(_case fp32 bf16 fp32_ties bf16_ties)
  set(_c ${_${_case}})
  minictx_verify_test(hostile_local_${_case} 1 QUICK ${_att} ${_c} --set attention.backend=local)
  minictx_verify_test(hostile_ring_zigzag_p2_${_case} 2 QUICK ${_att} ${_c} --set attention.backend=ring ${_zigzag})
  minictx_verify_test(hostile_ulysses_p2_${_case} 2 ${_att} ${_c} --set attention.backend=ulysses)
  minictx_verify_test(hostile_allgather_p2_${_case} 2 ${_att} ${_c} --set attention.backend=allgather)
  foreach(_type basic stripe)
    minictx_verify_test(hostile_ring_${_type}_p4_${_case} 4 ${_att} ${_c} --set attention.backend=ring
                        --set attention.ring_type=${_type})
  endforeach()
  minictx_verify_test(hostile_usp_2x2_${_case} 4 ${_att} ${_c} --set attention.backend=usp
                      --set attention.ulysses_degree=2 ${_zigzag})
  minictx_verify_test(hostile_double_ring_p4_w2_${_case} 4 ${_att} ${_c} --set attention.backend=double_ring
                      --set attention.window_size=2 --set topology.ranks_per_node=2 ${_zigzag})
  foreach(_bwd q kv)
    minictx_verify_test(hostile_burst_${_bwd}_p4_n2_${_case} 4 ${_att} ${_c} --set attention.backend=burst
                        --set attention.bwd_comm=${_bwd} --set topology.ranks_per_node=2 ${_zigzag})
  endforeach()
endforeach()
# Model mode: the scale reaches x and the residual stream (the RMSNorm before attention
# takes it out of the logits), in the app and in the reference alike.
foreach(_dtype fp32 bf16)
  minictx_verify_test(hostile_ring_model_p2_${_dtype} 2 --set model.preset=tiny --set model.layers=2
                      --set run.dtype=${_dtype} --set run.input_scale=128 --set attention.backend=ring ${_zigzag}
                      --set sequence.length=65)
endforeach()
# A scale that is not a power of two would round the inputs differently in each dtype.
minictx_error_test(input_scale_not_power_of_two 2 "run.input_scale must be a power of two .*, got 100"
                   verify --set run.input_scale=100)
