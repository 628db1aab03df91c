# The attention variants: sliding windows (attention.window, per layer), attention sinks
# (attention.sinks) and MLA head shapes (model.head_dim_v beside model.head_dim) through
# every backend and ring layout against the fp64 reference, on 1, 3, 4 and 8 ranks, one
# launch per rank count: lengths every layout pads (301, 203), GQA (8 query heads on 4 KV
# heads; replicated KV heads on 8 ranks), with packed documents, causal and not, fp32 and
# 16-bit, attention and model mode (a window on every other layer, checkpointing); the
# bytes a windowed ring sends against its schedule and its projection, falling as the
# window shrinks; the dumps an outside PyTorch fp64 model checks; the deck's errors. The
# mask, the hops, the kernels and the negative controls (a window ignored, a sink merged
# once per ring step, a wrong value head dim: each INVALID): test_variants.
set(_att --set run.mode=attention --set sequence.length=301)
set(_model --set model.preset=tiny --set model.layers=2 --set sequence.length=203)
# Each variant alone, and all three with documents (a point is split at spaces).
set(_window --set attention.window=23)
set(_all --set attention.window=23 --set attention.sinks=true --set model.head_dim_v=48)
set(_docs --set sequence.documents=[37,1,100,63,1,99])
set(_every_other --set "attention.window={\"layers\":[17,global]}" --set attention.sinks=true
                 --set model.head_dim_v=48)
# A long-tailed packing for the balanced layout.
set(_pareto --set "sequence.documents={\"pareto\":[4,200],\"alpha\":1,\"seed\":3}")

# One rank: the local backend. The quick label holds these.
minictx_verify_test(variants_local_p1 1 QUICK ${_att} ${_all} ${_docs})
minictx_verify_test(variants_local_model_bf16_p1 1 QUICK ${_model} ${_every_other} --set run.dtype=bf16)
minictx_verify_test(variants_local_full_fp16_p1 1 ${_att} --set attention.window=9 --set attention.causal=false
                    --set attention.sinks=true --set run.dtype=fp16)
minictx_verify_test(variants_local_sinks_p1 1 ${_att} --set attention.sinks=true)
minictx_verify_test(variants_local_head_dim_v_p1 1 ${_att} --set model.head_dim_v=16)
# Every other backend on one rank (a ring of one: no step sends).
foreach(_backend ring ulysses usp allgather double_ring burst)
  minictx_verify_test(variants_${_backend}_p1 1 ${_att} --set attention.backend=${_backend} ${_all} ${_docs})
endforeach()

# Every ring layout, the all-gather, Burst, Ulysses, USP and a double ring of three
# one-rank windows on 3 ranks; the model with a window on every other layer, through
# zigzag in bf16 and stripe's half recompute.
foreach(_type basic zigzag stripe)
  set(_t --set attention.backend=ring --set attention.ring_type=${_type})
  minictx_verify_test(variants_ring_${_type}_p3 3 ${_att} ${_t} ${_all})
  minictx_verify_test(variants_ring_${_type}_docs_p3 3 ${_att} ${_t} ${_all} ${_docs})
  minictx_verify_test(variants_ring_${_type}_window_full_p3 3 ${_att} ${_t} ${_window}
                      --set attention.causal=false)
endforeach()
minictx_verify_test(variants_allgather_p3 3 ${_att} --set attention.backend=allgather ${_all} ${_docs})
minictx_verify_test(variants_burst_basic_p3 3 ${_att} --set attention.backend=burst --set attention.ring_type=basic
                    --set topology.ranks_per_node=3 ${_all})
# Ulysses and USP over 3 ranks need a head count 3 divides.
set(_heads6 --set model.heads=6 --set model.kv_heads=3)
minictx_verify_test(variants_ulysses_p3 3 ${_att} --set attention.backend=ulysses ${_heads6} ${_all} ${_docs})
minictx_verify_test(variants_usp_zigzag_p3 3 ${_att} --set attention.backend=usp --set attention.ulysses_degree=3
                    ${_heads6} --set attention.ring_type=zigzag ${_all})
minictx_verify_test(variants_double_ring_p3 3 ${_att} --set attention.backend=double_ring --set attention.ring_type=zigzag
                    --set attention.window_size=1 --set topology.ranks_per_node=1 ${_all} ${_docs})
# The balanced layout (its chunks cut to their documents and window), with the Burst
# Q-side backward on a long-tailed packing; the model with an LM head through it.
minictx_verify_test(variants_ring_balanced_p3 3 ${_att} --set attention.backend=ring --set attention.ring_type=balanced
                    ${_all} ${_docs})
minictx_verify_test(variants_burst_balanced_q_p3 3 ${_att} --set attention.backend=burst
                    --set attention.ring_type=balanced --set attention.bwd_comm=q --set topology.ranks_per_node=3
                    ${_all} ${_pareto})
minictx_verify_test(variants_ring_balanced_model_vocab_p3 3 ${_model} --set attention.backend=ring
                    --set attention.ring_type=balanced ${_every_other} --set model.vocab=50
                    --set sequence.documents=[37,1,100,65])
# With the numerics of the rings: a 16-bit running accumulator, and logits at scale 128
# (the LSE's two planes through the sink's merge and the Q-side backward).
minictx_verify_test(variants_ring_zigzag_accumulator_bf16_p3 3 ${_att} --set attention.backend=ring
                    --set attention.ring_type=zigzag ${_all} ${_docs} --set run.dtype=bf16
                    --set attention.partials=accumulator)
minictx_verify_test(variants_burst_q_large_logits_p3 3 ${_att} --set attention.backend=burst
                    --set attention.ring_type=basic --set attention.bwd_comm=q --set topology.ranks_per_node=3
                    ${_all} --set run.input_scale=128 --set run.key_directions=4)
minictx_verify_test(variants_ring_zigzag_model_bf16_p3 3 ${_model} --set attention.backend=ring
                    --set attention.ring_type=zigzag ${_every_other} --set run.dtype=bf16 --set model.vocab=50)
minictx_verify_test(variants_ring_stripe_model_half_p3 3 ${_model} --set attention.backend=ring
                    --set attention.ring_type=stripe ${_every_other} --set run.checkpointing=selective_half)

# Ulysses (2 heads per rank), USP, the double ring and Burst (both backwards, and Ulysses
# inside a node) on 4 ranks as 2 emulated nodes, the all-gather and the other ring layouts;
# the model through USP with full checkpointing, and a basic ring in fp16 with storage
# partials.
set(_n2 --set topology.ranks_per_node=2)
minictx_verify_test(variants_ulysses_p4 4 ${_att} --set attention.backend=ulysses ${_all} ${_docs})
minictx_verify_test(variants_usp_zigzag_p4 4 ${_att} --set attention.backend=usp --set attention.ulysses_degree=2
                    --set attention.ring_type=zigzag ${_all})
minictx_verify_test(variants_usp_basic_p4 4 ${_att} --set attention.backend=usp --set attention.ulysses_degree=2
                    --set attention.ring_type=basic ${_all} ${_docs})
minictx_verify_test(variants_double_ring_p4 4 ${_att} --set attention.backend=double_ring --set attention.ring_type=basic
                    --set attention.window_size=2 ${_n2} ${_all})
foreach(_bwd q kv)
  minictx_verify_test(variants_burst_${_bwd}_p4 4 ${_att} --set attention.backend=burst --set attention.ring_type=basic
                      --set attention.bwd_comm=${_bwd} --set topology.ranks_per_node=4 ${_all})
endforeach()
minictx_verify_test(variants_burst_ulysses_p4 4 ${_att} --set attention.backend=burst --set attention.intra=ulysses
                    ${_n2} ${_all})
minictx_verify_test(variants_allgather_p4 4 ${_att} --set attention.backend=allgather ${_all})
foreach(_type zigzag stripe)
  minictx_verify_test(variants_ring_${_type}_p4 4 ${_att} --set attention.backend=ring --set attention.ring_type=${_type}
                      ${_all} ${_docs})
endforeach()
minictx_verify_test(variants_usp_model_full_p4 4 ${_model} --set attention.backend=usp --set attention.ulysses_degree=2
                    --set attention.ring_type=basic ${_every_other} --set run.checkpointing=full)
minictx_verify_test(variants_ring_basic_fp16_storage_p4 4 ${_att} --set attention.backend=ring
                    --set attention.ring_type=basic ${_all} --set run.dtype=fp16 --set attention.partials=storage)

# 8 ranks: every ring layout, Ulysses with its KV heads replicated (4 on 8 ranks), USP,
# the double ring, the all-gather and Burst on 2 emulated nodes, and the model through a
# basic ring.
foreach(_type basic zigzag stripe)
  minictx_verify_test(variants_ring_${_type}_p8 8 ${_att} --set attention.backend=ring --set attention.ring_type=${_type}
                      ${_all} ${_docs})
endforeach()
minictx_verify_test(variants_ulysses_p8 8 ${_att} --set attention.backend=ulysses ${_all})
minictx_verify_test(variants_usp_p8 8 ${_att} --set attention.backend=usp --set attention.ulysses_degree=2
                    --set attention.ring_type=basic ${_all})
minictx_verify_test(variants_double_ring_p8 8 ${_att} --set attention.backend=double_ring --set attention.ring_type=zigzag
                    --set attention.ulysses_degree=2 --set attention.window_size=2 --set topology.ranks_per_node=4
                    ${_all})
minictx_verify_test(variants_ring_balanced_p8 8 ${_att} --set attention.backend=ring --set attention.ring_type=balanced
                    ${_all} ${_pareto})
minictx_verify_test(variants_usp_balanced_p8 8 ${_att} --set attention.backend=usp --set attention.ulysses_degree=2
                    --set attention.ring_type=balanced ${_all} ${_docs})
minictx_verify_test(variants_allgather_p8 8 ${_att} --set attention.backend=allgather ${_all} ${_docs})
minictx_verify_test(variants_burst_p8 8 ${_att} --set attention.backend=burst --set attention.ring_type=zigzag
                    --set topology.ranks_per_node=4 ${_all} ${_docs})
minictx_verify_test(variants_ring_basic_model_p8 8 ${_model} --set attention.backend=ring --set attention.ring_type=basic
                    ${_every_other})

if(_h5py_python)
  # A windowed ring's bytes per rank against its schedule, and its projection's.
  add_test(NAME bytes_window_ring
           COMMAND ${_h5py_python} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_window_bytes.py ${MPIEXEC_BIN}
                   $<TARGET_FILE:minictx> ${CMAKE_SOURCE_DIR})
  set_tests_properties(bytes_window_ring PROPERTIES PASS_REGULAR_EXPRESSION "window bytes ok" PROCESSORS 4
                       TIMEOUT 120)
  # The outside PyTorch fp64 check of a dump with a window, sinks, documents, GQA and
  # MLA heads (skipped where PyTorch is not installed).
  set(_dump ${CMAKE_CURRENT_BINARY_DIR}/variants_dump.h5)
  # A dump never replaces a file: the last run's goes first.
  add_test(NAME verify_dump_variants_clean COMMAND ${CMAKE_COMMAND} -E rm -f ${_dump} ${_dump}.lock)
  set_tests_properties(verify_dump_variants_clean PROPERTIES FIXTURES_SETUP variants_dump_clean)
  minictx_launch(_dump_cmd 3 verify --dump ${_dump} ${_att} --set attention.backend=ring
                 --set attention.ring_type=zigzag ${_all} --set sequence.length=203
                 --set sequence.documents=[37,1,100,65])
  add_test(NAME verify_dump_variants COMMAND ${_dump_cmd})
  set_tests_properties(verify_dump_variants PROPERTIES FIXTURES_REQUIRED variants_dump_clean
                       FIXTURES_SETUP variants_dump PROCESSORS 3 TIMEOUT 120 PASS_REGULAR_EXPRESSION "VALID")
  add_test(NAME torch_dump_variants COMMAND ${_h5py_python} ${CMAKE_SOURCE_DIR}/tools/check-dump-torch.py ${_dump})
  set_tests_properties(torch_dump_variants PROPERTIES FIXTURES_REQUIRED variants_dump SKIP_RETURN_CODE 77
                       TIMEOUT 60)
endif()

# `minictx list` names each variant and the devices whose kernels have it.
add_test(NAME list_attention_variants COMMAND $<TARGET_FILE:minictx> list)
set_tests_properties(list_attention_variants PROPERTIES LABELS quick TIMEOUT 60 PASS_REGULAR_EXPRESSION
                     "attention variants [^\n]*\n  window +attention.window[^\n]*devices: kokkos\n  sinks +attention.sinks[^\n]*\n  head_dim_v +model.head_dim_v")

minictx_error_test(variants_window_zero 2 "attention.window must be global, a window in tokens" run --dry-run
                   --set attention.window=0)
minictx_error_test(variants_window_layers 2 "attention.window \\{layers: \\[8, 16, 32\\]\\} lists 3 layers' windows, but model.layers is 2"
                   run --dry-run --set "attention.window={layers: [8, 16, 32]}")
minictx_error_test(variants_cuda_sinks 2 "run.device cuda has no attention kernels for attention.sinks true \\(run.device kokkos has\\)"
                   run --dry-run --set run.device=cuda --set attention.sinks=true)
# A preset's MLA value heads on the cuda device name the preset.
minictx_error_test(variants_cuda_preset_value_heads 1
                   "model.preset=deepseek-v3-like: run.device cuda has no attention kernels for model.head_dim_v 128"
                   run --dry-run --set run.device=cuda --set model.preset=deepseek-v3-like --set model.vocab=0)
minictx_error_test(variants_head_dim_v 2 "model.head_dim_v must be at least 0, got -1" run --dry-run
                   --set model.head_dim_v=-1)
