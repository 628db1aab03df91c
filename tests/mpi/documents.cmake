# Packed documents (sequence.documents) through every backend and layout against the fp64
# reference, on 1, 2, 3, 4 and 8 ranks, one launch per rank count: documents that zigzag
# and stripe chunks cut, one-token documents, lengths the layouts pad, batch rows with
# different packings, generated lengths, GQA (the default 8 heads on 4 KV heads) and MHA,
# causal and not, and the model stack (RoPE restarts); the bytes a ring sends with
# documents; the deck's errors. One document as long as the sequence giving bitwise the
# result of none, the mask, the skipped blocks and the FLOPs: test_documents.
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
