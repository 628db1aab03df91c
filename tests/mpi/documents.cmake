# Packed documents (sequence.documents) through every backend and layout against the fp64
# reference, on 1, 2, 3, 4 and 8 ranks, one launch per rank count: documents that zigzag
# and stripe chunks cut, one-token documents, lengths the layouts pad, batch rows with
# different packings, generated lengths, GQA (the default 8 heads on 4 KV heads) and MHA,
# causal and not, and the model stack (RoPE restarts); ring_type balanced wherever a
# backend takes a ring_type; the bytes a ring sends with documents; the deck's errors. One
# document as long as the sequence giving bitwise the result of none, the mask, the
# skipped blocks and the FLOPs: test_documents; the balanced layout itself: test_layout.
set(_att --set run.mode=attention)
set(_model --set model.preset=tiny --set model.layers=1)
# 301 tokens: every layout at 2, 3, 4 and 8 ranks pads it. Documents cut the chunks.
set(_len --set sequence.length=301)
set(_cut --set sequence.documents=[37,1,100,63,1,99])
set(_ones --set sequence.documents=[1,1,150,1,148])
# A point is split at spaces: its mappings are written JSON style, with quoted keys.
set(_rows --set sequence.batch=2 --set "sequence.documents={\"rows\":[[120,181],[1,299,1]]}")
set(_drawn --set "sequence.documents={\"uniform\":[1,60],\"seed\":4}")

# Every backend's representative configurations, documents that cut the chunks.
minictx_verify_each_config(documents QUICK local ring_zigzag_p2 ulysses_p2 allgather_p2
                           SETTINGS ${_att} ${_len} ${_cut})
minictx_verify_test(documents_local_model_p1 1 QUICK ${_model} ${_len} ${_rows})

# Every ring layout at each rank count (but the configurations' own, above); the quick
# label holds 2 ranks.
get_property(_configs GLOBAL PROPERTY minictx_backend_configs)
set(_quick_2 QUICK)
foreach(_p 2 3 4 8)
  foreach(_type basic zigzag stripe)
    set(_t --set attention.backend=ring --set attention.ring_type=${_type})
    if(NOT ring_${_type}_p${_p} IN_LIST _configs)
      minictx_verify_test(documents_ring_${_type}_p${_p} ${_p} ${_quick_${_p}} ${_att} ${_t} ${_len} ${_cut})
    endif()
    minictx_verify_test(documents_ring_${_type}_p${_p}_rows ${_p} ${_quick_${_p}} ${_att} ${_t} ${_len} ${_rows})
  endforeach()
  minictx_verify_test(documents_allgather_p${_p}_ones ${_p} ${_quick_${_p}} ${_att} --set attention.backend=allgather
                      ${_len} ${_ones})
endforeach()
minictx_verify_test(documents_ring_zigzag_p3_full 3 ${_att} --set attention.backend=ring --set attention.ring_type=zigzag
                    --set attention.causal=false ${_len} ${_drawn})
minictx_verify_test(documents_ring_stripe_p4_mha_full 4 ${_att} --set attention.backend=ring
                    --set attention.ring_type=stripe --set model.kv_heads=8 --set attention.causal=false ${_len} ${_ones})
minictx_verify_test(documents_ring_zigzag_model_p2 2 QUICK ${_model} --set attention.backend=ring
                    --set attention.ring_type=zigzag ${_len} ${_cut})
# ring_type balanced (chunks dealt to balance the pairs) on every backend that takes a
# ring_type, at 1, 3, 4 and 8 ranks (the quick label: ring and Burst on 2): the packings
# above and a long-tailed one, whose fp64 references the launch shares with the cases above.
set(_tail --set "sequence.documents={\"pareto\":[1,301],\"alpha\":1,\"seed\":5}")
set(_bal --set attention.ring_type=balanced)
minictx_verify_test(documents_ring_balanced_p1 1 QUICK ${_att} --set attention.backend=ring ${_bal} ${_len} ${_cut})
minictx_verify_test(documents_ring_balanced_p2 2 QUICK ${_att} --set attention.backend=ring ${_bal} ${_len} ${_tail})
minictx_verify_test(documents_burst_balanced_q_p2 2 QUICK ${_att} --set attention.backend=burst ${_bal}
                    --set topology.ranks_per_node=1 ${_len} ${_rows})
foreach(_p 3 4 8)
  foreach(_docs _cut _rows _tail)
    minictx_verify_test(documents_ring_balanced_p${_p}${_docs} ${_p} ${_att} --set attention.backend=ring ${_bal}
                        ${_len} ${${_docs}})
  endforeach()
endforeach()
minictx_verify_test(documents_ring_balanced_p3_full 3 ${_att} --set attention.backend=ring ${_bal}
                    --set attention.causal=false ${_len} ${_drawn})
minictx_verify_test(documents_ring_balanced_p4_none 4 ${_att} --set attention.backend=ring ${_bal} ${_len})
minictx_verify_test(documents_ring_balanced_model_p3 3 ${_model} --set attention.backend=ring ${_bal} ${_len} ${_tail})
minictx_verify_test(documents_ring_balanced_model_p4_bf16 4 ${_model} --set attention.backend=ring ${_bal}
                    --set run.dtype=bf16 ${_len} ${_cut})
minictx_verify_test(documents_burst_balanced_kv_p3 3 ${_att} --set attention.backend=burst ${_bal}
                    --set attention.bwd_comm=kv --set topology.ranks_per_node=3 ${_len} ${_cut})
minictx_verify_test(documents_usp_2x2_balanced_p4 4 ${_att} --set attention.backend=usp --set attention.ulysses_degree=2
                    ${_bal} ${_len} ${_tail})
minictx_verify_test(documents_double_ring_balanced_p4_w2 4 ${_att} --set attention.backend=double_ring ${_bal}
                    --set attention.window_size=2 --set topology.ranks_per_node=2 ${_len} ${_rows})
minictx_verify_test(documents_burst_balanced_q_p4_n2 4 ${_att} --set attention.backend=burst ${_bal}
                    --set topology.ranks_per_node=2 ${_len} ${_tail})
minictx_verify_test(documents_usp_2x4_balanced_p8 8 ${_att} --set attention.backend=usp --set attention.ulysses_degree=2
                    ${_bal} ${_len} ${_cut})
minictx_verify_test(documents_double_ring_balanced_p8_u2_w2 8 ${_att} --set attention.backend=double_ring ${_bal}
                    --set attention.ulysses_degree=2 --set attention.window_size=2 --set topology.ranks_per_node=4
                    ${_len} ${_tail})
minictx_verify_test(documents_burst_ulysses_balanced_p8_n4 8 ${_att} --set attention.backend=burst
                    --set attention.intra=ulysses ${_bal} --set topology.ranks_per_node=4 ${_len} ${_rows})
minictx_verify_test(documents_burst_balanced_p8_n4 8 ${_att} --set attention.backend=burst ${_bal}
                    --set topology.ranks_per_node=2 ${_len} ${_drawn})
minictx_error_test(documents_balanced_ulysses 2 "attention.ring_type does not apply to attention.backend ulysses"
                   verify ${_att} --set attention.backend=ulysses ${_bal} ${_len} ${_cut})

# The LM head (model.vocab: the chunked cross-entropy and its weight gradient) on every
# backend, in the model-mode launches this file has anyway: lengths the layouts pad (their
# padded rows carry no label), packed documents, 16 bits (fp16's loss scale), chunks
# given and automatic.
set(_head --set model.vocab=512)
minictx_verify_test(lm_head_local_p1 1 QUICK ${_model} ${_head} ${_len} ${_cut})
minictx_verify_test(lm_head_ring_zigzag_p2_bf16 2 QUICK ${_model} ${_head} --set attention.backend=ring
                    --set attention.ring_type=zigzag --set run.dtype=bf16 ${_len})
minictx_verify_test(lm_head_ring_zigzag_p3 3 ${_model} ${_head} --set attention.backend=ring
                    --set attention.ring_type=zigzag --set run.loss_chunk=7 ${_len} ${_cut})
minictx_verify_test(lm_head_allgather_p3 3 ${_model} ${_head} --set attention.backend=allgather ${_len})
minictx_verify_test(lm_head_burst_p3 3 ${_model} ${_head} --set attention.backend=burst --set topology.ranks_per_node=3
                    ${_len} ${_tail})
minictx_verify_test(lm_head_ulysses_p4 4 ${_model} ${_head} --set attention.backend=ulysses ${_len} ${_rows})
minictx_verify_test(lm_head_usp_2x2_p4_fp16 4 ${_model} ${_head} --set attention.backend=usp
                    --set attention.ulysses_degree=2 --set run.dtype=fp16 ${_len} ${_cut})
minictx_verify_test(lm_head_double_ring_p4_w2 4 ${_model} ${_head} --set attention.backend=double_ring
                    --set attention.window_size=2 --set topology.ranks_per_node=2 --set run.checkpointing=full ${_len})
minictx_verify_test(lm_head_ring_stripe_p8 8 ${_model} ${_head} --set attention.backend=ring
                    --set attention.ring_type=stripe --set run.checkpointing=selective_half ${_len} ${_cut})
minictx_verify_test(lm_head_ring_balanced_p8 8 ${_model} ${_head} --set attention.backend=ring ${_bal} ${_len}
                    ${_tail})
minictx_verify_test(lm_head_burst_kv_p8_n4 8 ${_model} ${_head} --set attention.backend=burst
                    --set attention.bwd_comm=kv --set topology.ranks_per_node=4 ${_len} ${_rows})
minictx_verify_test(lm_head_ulysses_p8_bf16 8 ${_model} ${_head} --set attention.backend=ulysses --set run.dtype=bf16
                    ${_len})
# A wrong label makes verify refuse the loss and the gradients (the test seam
# MINICTX_INJECT_FAULT gives rank 1's first token the next class).
minictx_launch(_wrong_label 2 verify ${_model} ${_head} --set attention.backend=ring ${_len})
add_test(NAME verify_refuses_wrong_label COMMAND ${_wrong_label})
set_tests_properties(verify_refuses_wrong_label PROPERTIES ENVIRONMENT MINICTX_INJECT_FAULT=1:wrong_label
                     PASS_REGULAR_EXPRESSION "outputs/loss [^\n]*\\| NO \\|.*grads/lm_head [^\n]*\\| NO \\|.*\nINVALID"
                     LABELS quick PROCESSORS 2 TIMEOUT 60)
minictx_error_test(lm_head_cuda 1 "model.vocab 512 \\(the LM head and its loss\\) needs run.device kokkos"
                   run --dry-run ${_model} ${_head} --set run.device=cuda)
minictx_error_test(loss_chunk_without_head 1 "run.loss_chunk sets the rows of the LM head's chunks; this point has none"
                   run --dry-run ${_model} --set run.loss_chunk=8)

# Ulysses (heads split: 8 heads on 2, 4, 8 ranks), USP, double ring and Burst (the Q-side
# backward and the ring one).
foreach(_p 4 8)
  minictx_verify_test(documents_ulysses_p${_p} ${_p} ${_att} --set attention.backend=ulysses ${_len} ${_cut})
endforeach()
minictx_verify_test(documents_ulysses_p4_rows 4 ${_att} --set attention.backend=ulysses ${_len} ${_rows})
minictx_verify_test(documents_usp_2x1_p2 2 QUICK ${_att} --set attention.backend=usp --set attention.ulysses_degree=2
                    ${_len} ${_ones})
minictx_verify_test(documents_usp_2x2_stripe_p4 4 ${_att} --set attention.backend=usp --set attention.ulysses_degree=2
                    --set attention.ring_type=stripe ${_len} ${_cut})
foreach(_type zigzag stripe)
  minictx_verify_test(documents_usp_2x4_${_type}_p8 8 ${_att} --set attention.backend=usp
                      --set attention.ulysses_degree=2 --set attention.ring_type=${_type} ${_len} ${_rows})
  minictx_verify_test(documents_double_ring_${_type}_p2_w1 2 QUICK ${_att} --set attention.backend=double_ring
                      --set attention.ring_type=${_type} --set attention.window_size=1 --set topology.ranks_per_node=1
                      ${_len} ${_cut})
  minictx_verify_test(documents_double_ring_${_type}_p4_w2 4 ${_att} --set attention.backend=double_ring
                      --set attention.ring_type=${_type} --set attention.window_size=2 --set topology.ranks_per_node=2
                      ${_len} ${_rows})
  minictx_verify_test(documents_double_ring_${_type}_p8_u2_w2 8 ${_att} --set attention.backend=double_ring
                      --set attention.ring_type=${_type} --set attention.ulysses_degree=2 --set attention.window_size=2
                      --set topology.ranks_per_node=4 ${_len} ${_cut})
  foreach(_bwd q kv)
    minictx_verify_test(documents_burst_${_type}_${_bwd}_p2 2 QUICK ${_att} --set attention.backend=burst
                        --set attention.ring_type=${_type} --set attention.bwd_comm=${_bwd}
                        --set topology.ranks_per_node=1 ${_len} ${_cut})
    minictx_verify_test(documents_burst_${_type}_${_bwd}_p4_n2 4 ${_att} --set attention.backend=burst
                        --set attention.ring_type=${_type} --set attention.bwd_comm=${_bwd}
                        --set topology.ranks_per_node=2 ${_len} ${_rows})
  endforeach()
  minictx_verify_test(documents_burst_ulysses_${_type}_p4_n2 4 ${_att} --set attention.backend=burst
                      --set attention.intra=ulysses --set attention.ring_type=${_type} --set topology.ranks_per_node=2
                      ${_len} ${_ones})
  minictx_verify_test(documents_burst_${_type}_p8_n4 8 ${_att} --set attention.backend=burst
                      --set attention.ring_type=${_type} --set topology.ranks_per_node=2 ${_len} ${_drawn})
endforeach()
minictx_verify_test(documents_burst_zigzag_p3 3 ${_att} --set attention.backend=burst --set attention.ring_type=zigzag
                    --set topology.ranks_per_node=3 ${_len} ${_cut})

# The bytes a ring sends do not depend on the documents: ring_zigzag_p4_two_nodes's figures.
minictx_bytes_test(ring_zigzag_p4_two_nodes_documents 4 532480,0,532480,0 0,532480,0,532480
                   --set attention.backend=ring --set attention.ring_type=zigzag --set sequence.length=100
                   --set sequence.batch=2 --set topology.ranks_per_node=2 --set sequence.documents=[40,1,59])

minictx_error_test(documents_sum 2 "sequence.documents lengths sum to 300 tokens, but sequence.length is 301"
                   verify ${_att} --set attention.backend=ring ${_len} --set sequence.documents=[100,200])
minictx_error_test(documents_rows 2 "sequence.documents gives 2 rows of lengths, but sequence.batch is 1"
                   run ${_att} --set attention.backend=ring --set sequence.length=3 --set "sequence.documents={rows: [[3], [3]]}")
