# The allgather backend against the fp64 reference: 1 to 4 ranks (3 leaves padding),
# causal and not, GQA and MHA, batch > 1, model mode.

# Its representative configuration, which the feature suites run (support.cmake).
minictx_backend_config(allgather allgather_p2 2)

set(_att --set run.mode=attention --set attention.backend=allgather)
set(_model --set model.preset=tiny --set attention.backend=allgather)
minictx_verify_test(allgather_1_causal 1 ${_att} --set sequence.length=257)
minictx_verify_test(allgather_2_mha_full 2 QUICK ${_att} --set model.kv_heads=8 --set attention.causal=false
                    --set sequence.length=333 --set sequence.batch=2)
minictx_verify_test(allgather_3_causal 3 ${_att} --set sequence.length=1000 --set sequence.batch=2)
minictx_verify_test(allgather_4_causal_single_device 4 ${_att} --set sequence.length=333 --reference single-device)
minictx_verify_test(allgather_2_model 2 QUICK ${_model} --set model.layers=2 --set sequence.length=300)
minictx_verify_test(allgather_4_model_full 4 ${_model} --set model.layers=1 --set attention.causal=false
                    --set sequence.length=257 --set sequence.batch=2)
