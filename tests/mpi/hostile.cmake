# Hostile numerics: inputs scaled by run.input_scale make attention logits large, so the
# softmax, its exponentials and the LSE merge meet differences far beyond the range of
# fp32's exp (about 88). Every backend against fp64, where a NaN or Inf anywhere fails
# the case. fp32 at scale 32 (the logits of a row spread over about 2·10³) at fp32's
# tolerance; bf16 at scale 128 (spread over about 3·10⁴, up to 4.7·10⁴) at bf16's. Past
# scale 32 fp32 scores and LSEs carry rounding errors of their own (a logit of 10⁴ has an
# ulp of 10⁻³) that even the local backend cannot keep under 10⁻⁴ against fp64
# (docs/user-guide.md, "Large logits"). Every backend's representative configurations.
set(_att --set run.mode=attention --set sequence.length=255)
set(_fp32 --set run.dtype=fp32 --set run.input_scale=32)
set(_bf16 --set run.dtype=bf16 --set run.input_scale=128)
foreach(_case fp32 bf16)
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
