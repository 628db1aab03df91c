# The ulysses backend (degree = world size) against the fp64 reference: 1 to 8 ranks,
# causal and not, GQA and MHA, KV heads replicated when ranks outnumber them (8 ranks
# with 4 and with 1 KV heads), lengths that leave padding, batch > 1, model mode.

# Its representative configuration, which the feature suites run (support.cmake).
minictx_backend_config(ulysses ulysses_p2 2)

set(_att --set run.mode=attention --set attention.backend=ulysses)
set(_model --set model.preset=tiny --set attention.backend=ulysses)
minictx_verify_test(ulysses_1_causal 1 ${_att} --set sequence.length=1000)
minictx_verify_test(ulysses_2_mha_full 2 QUICK ${_att} --set model.kv_heads=8 --set attention.causal=false
                    --set sequence.length=333 --set sequence.batch=2)
minictx_verify_test(ulysses_4_causal 4 ${_att} --set sequence.length=1000)
minictx_verify_test(ulysses_4_mha_single_device 4 ${_att} --set model.kv_heads=8 --set sequence.length=333
                    --reference single-device)
minictx_verify_test(ulysses_8_kv_replicated 8 ${_att} --set sequence.length=333 --set sequence.batch=2)
minictx_verify_test(ulysses_8_mqa_full 8 ${_att} --set model.kv_heads=1 --set attention.causal=false
                    --set sequence.length=100 --set attention.block_q=16 --set attention.block_k=32)
minictx_verify_test(ulysses_2_model 2 QUICK ${_model} --set model.layers=2 --set sequence.length=300 --set sequence.batch=2)
minictx_verify_test(ulysses_4_model_full 4 ${_model} --set model.layers=1 --set attention.causal=false
                    --set sequence.length=257)

minictx_error_test(ulysses_degree_heads 3 "the Ulysses degree 3 does not divide model.heads 8" verify
                   --set attention.backend=ulysses)
minictx_error_test(ulysses_degree_kv_heads 4 "neither divides nor is a multiple of model.kv_heads 6" run
                   --set attention.backend=ulysses --set model.heads=12 --set model.kv_heads=6)
minictx_error_test(ulysses_explicit_degree 4 "attention.ulysses_degree 2 does not apply to backend ulysses" run
                   --set attention.backend=ulysses --set attention.ulysses_degree=2)
minictx_error_test(ulysses_selective_half 2 "selective_half recomputes half the query rows through a ring without a head exchange; attention.backend ulysses cannot"
                   run --set attention.backend=ulysses --set run.checkpointing=selective_half)
# Attention mode has no checkpointing, so the key does not restrict the backend there.
minictx_launch(_cmd 2 run --dry-run --set run.mode=attention --set attention.backend=ulysses
               --set run.checkpointing=selective_half)
add_test(NAME ulysses_selective_half_attention_mode COMMAND ${_cmd})
set_tests_properties(ulysses_selective_half_attention_mode PROPERTIES PASS_REGULAR_EXPRESSION "1 run on 2 ranks"
                     LABELS quick TIMEOUT 60)
