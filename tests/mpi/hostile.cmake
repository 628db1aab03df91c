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
foreach(_case fp32 bf16 fp32_ties bf16_ties)
  minictx_verify_each_config(hostile SUFFIX _${_case} QUICK local ring_zigzag_p2 SETTINGS ${_att} ${_${_case}})
endforeach()
# Model mode: the scale reaches x and the residual stream (the RMSNorm before attention
# takes it out of the logits), in the app and in the reference alike.
foreach(_dtype fp32 bf16)
  minictx_verify_test(hostile_ring_model_p2_${_dtype} 2 --set model.preset=tiny --set model.layers=2
                      --set run.dtype=${_dtype} --set run.input_scale=128 --set attention.backend=ring
                      --set attention.ring_type=zigzag --set sequence.length=65)
endforeach()
# A scale that is not a power of two would round the inputs differently in each dtype.
minictx_error_test(input_scale_not_power_of_two 2 "run.input_scale must be a power of two .*, got 100"
                   verify --set run.input_scale=100)
