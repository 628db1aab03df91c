# The local backend (one rank) against fp64 and the single-device path, model and
# attention modes, GQA and MHA, causal and not, lengths that are not powers of two.

# Its representative configuration, which the feature suites run (support.cmake).
minictx_backend_config(local local 1)

set(_tiny --set model.preset=tiny --set model.layers=2)
minictx_verify_test(local_model_gqa_causal 1 QUICK ${_tiny} --set sequence.length=257)
minictx_verify_test(local_model_mha_full 1 ${_tiny} --set model.kv_heads=8 --set attention.causal=false
                    --set sequence.length=300 --set sequence.batch=2)
minictx_verify_test(local_attention_causal 1 --set run.mode=attention --set sequence.length=1000)
minictx_verify_test(local_attention_full 1 QUICK --set run.mode=attention --set attention.causal=false
                    --set sequence.length=777 --set attention.block_q=32 --set attention.block_k=48)
minictx_verify_test(local_single_device 1 --reference single-device)
minictx_verify_test(local_model_ckpt_full 1 ${_tiny} --set run.checkpointing=full --set sequence.length=200)
minictx_verify_test(local_model_ckpt_selective 1 ${_tiny} --set run.checkpointing=selective
                    --set sequence.length=200)
# selective_half: the recompute runs the attention of the first half of the queries only.
foreach(_causal true false)
  minictx_verify_test(local_model_ckpt_selective_half_causal_${_causal} 1 ${_tiny}
                      --set run.checkpointing=selective_half --set attention.causal=${_causal} --set sequence.length=201)
endforeach()

minictx_error_test(local_on_two_ranks 2 "attention.backend local runs on 1 rank" verify)
minictx_error_test(unknown_key 2 "did you mean 'attention.ring_type'" run --set attention.ring_typ=zigzag)
minictx_error_test(unknown_option 2 "minictx: error: The following argument was not expected: --bogus" verify --bogus)
minictx_error_test(point_unknown_key 2 "unknown key 'attention.ring_typ'" verify --point "sequence.length=64"
                   --point "attention.ring_typ=x")

find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_test(NAME verify_dump COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_dump.py $<TARGET_FILE:minictx>
                                  ${MPIEXEC_BIN})
set_tests_properties(verify_dump PROPERTIES PASS_REGULAR_EXPRESSION "dump ok" PROCESSORS 2 TIMEOUT 120)
minictx_error_test(memory_estimate 2 "memory estimate .* exceeds" run --set attention.backend=ring
                   --set sequence.length=100000000)

# A wrong loss fails verify end to end: the test seam MINICTX_INJECT_FAULT hands verify a
# loss of 0 (tests/unit/test_verify_controls.cpp mutates every comparison, cheaply).
minictx_launch(_zero_loss 1 verify ${_tiny} --set sequence.length=64)
add_test(NAME verify_refuses_zero_loss COMMAND ${_zero_loss})
set_tests_properties(verify_refuses_zero_loss PROPERTIES ENVIRONMENT MINICTX_INJECT_FAULT=0:zero_loss
                     PASS_REGULAR_EXPRESSION "checks/loss_of_y[^\n]*\\| NO \\|.*\nINVALID" LABELS quick
                     PROCESSORS 1 TIMEOUT 60)
