# The ring backend (backends/ring): every ring_type on 1, 2, 3, 4 and 8 ranks against the
# fp64 reference, causal and not, GQA and MHA, lengths the layouts must pad, batch 2,
# the model stack (with checkpointing), the single-device reference, its deck errors,
# the bytes it sends, and (test_ring_blocks) its active-block rules.

# Its representative configurations, which the feature suites run (support.cmake).
minictx_backend_config(ring ring_basic_p4 4 --set attention.ring_type=basic)
minictx_backend_config(ring ring_zigzag_p2 2 --set attention.ring_type=zigzag)
minictx_backend_config(ring ring_stripe_p4 4 --set attention.ring_type=stripe)

set(_attn --set run.mode=attention --set attention.backend=ring)
set(_model --set model.preset=tiny --set attention.backend=ring)

# Lengths per ring size that no ring_type divides evenly (zigzag needs a multiple of 2P).
set(_len_1 97)
set(_len_2 999)
set(_len_3 333)
set(_len_4 998)
set(_len_8 500)
# The quick label: every ring_type on 2 ranks, and the zigzag model stack.
set(_quick_p2 QUICK)
set(_quick_model_zigzag QUICK)
foreach(_type basic zigzag stripe)
  set(_t --set attention.ring_type=${_type})
  foreach(_p 1 2 3 4 8)
    minictx_verify_test(ring_${_type}_p${_p} ${_p} ${_quick_p${_p}} ${_attn} ${_t} --set sequence.length=${_len_${_p}})
  endforeach()
  minictx_verify_test(ring_${_type}_p4_even 4 ${_attn} ${_t} --set sequence.length=1024)
  minictx_verify_test(ring_${_type}_p8_shorter_than_ring 8 ${_attn} ${_t} --set sequence.length=5)
  minictx_verify_test(ring_${_type}_p3_full 3 ${_attn} ${_t} --set attention.causal=false
                      --set sequence.length=333)
  minictx_verify_test(ring_${_type}_p4_mha_full 4 ${_attn} ${_t} --set model.kv_heads=8
                      --set attention.causal=false --set sequence.length=250)
  minictx_verify_test(ring_${_type}_p4_mha 4 ${_attn} ${_t} --set model.kv_heads=8 --set sequence.length=250)
  minictx_verify_test(ring_${_type}_p3_batch2 3 ${_attn} ${_t} --set sequence.batch=2 --set sequence.length=97)
  # Tiles smaller than a zigzag half and than a share: the kernel's tile skipping inside sub-blocks.
  minictx_verify_test(ring_${_type}_p3_small_tiles 3 ${_attn} ${_t} --set sequence.length=301
                      --set attention.block_q=16 --set attention.block_k=24)
  minictx_verify_test(ring_${_type}_model_p2 2 ${_quick_model_${_type}} ${_model} ${_t} --set model.layers=2 --set sequence.length=150)
  minictx_verify_test(ring_${_type}_model_p4 4 ${_model} ${_t} --set model.layers=1 --set sequence.length=201
                      --set sequence.batch=2)
endforeach()
minictx_verify_test(ring_model_p3_mha_full 3 ${_model} --set attention.ring_type=zigzag --set model.layers=1
                    --set model.kv_heads=8 --set attention.causal=false --set sequence.length=100)
# The gradient sums started after each layer's backward (the default) or after the whole
# backward, three layers so that several sums are in flight under the ring's transfers.
foreach(_when overlap after_backward)
  minictx_verify_test(ring_model_p4_grad_${_when} 4 ${_model} --set attention.ring_type=zigzag
                      --set model.layers=3 --set run.grad_reduce=${_when} --set sequence.length=120)
endforeach()
minictx_verify_test(ring_model_p3_ckpt_full 3 ${_model} --set attention.ring_type=zigzag --set model.layers=2
                    --set run.checkpointing=full --set sequence.length=100)
# selective_half over a stripe ring: the recompute's ring carries only the first half of
# every rank's K/V under a causal mask (the keys the first half's queries see), all of it
# without one. 3 ranks, 100 → 102 tokens: 34 local rows, 17 recomputed; the single-device
# reference runs the same policy through the local backend.
foreach(_causal true false)
  minictx_verify_test(ring_model_p3_ckpt_selective_half_causal_${_causal} 3 ${_model} --set attention.ring_type=stripe
                      --set model.layers=2 --set run.checkpointing=selective_half --set attention.causal=${_causal}
                      --set sequence.length=100 --set sequence.batch=2)
endforeach()
minictx_verify_test(ring_model_p4_ckpt_selective_half_single_device 4 ${_model} --set attention.ring_type=stripe
                    --set model.layers=2 --set run.checkpointing=selective_half --set sequence.length=150
                    --reference single-device)
minictx_error_test(selective_half_zigzag 2 "run.checkpointing selective_half needs attention.ring_type stripe"
                   verify ${_model} --set attention.ring_type=zigzag --set run.checkpointing=selective_half)
minictx_verify_test(ring_zigzag_p4_single_device 4 ${_attn} --set attention.ring_type=zigzag
                    --set sequence.length=998 --reference single-device)

minictx_error_test(ring_ulysses_degree 2 "attention.ulysses_degree does not apply to attention.backend ring \\(it applies to ulysses, usp"
                   verify --set attention.backend=ring --set attention.ulysses_degree=2)
minictx_error_test(ring_ring_degree 2 "attention.ring_degree does not apply to attention.backend ring \\(it applies to usp, double_ring\\)" verify --set attention.backend=ring
                   --set attention.ring_degree=4)

# Bytes sent per rank against the formulas in backends/engine/ring_engine.cpp (one window:
# forward 8·(P−1)·n, backward (16P−8)·n, n = B·L·Hkv·D), with the intra/inter-node split
# of emulated nodes: everything goes to ring rank r+1.
# P=4, 2 per node, zigzag 100 → 104, L=26, n = 2·26·4·32 = 6656: 80·n = 532480, sent
# inter-node by ranks 1 and 3.
minictx_bytes_test(ring_zigzag_p4_two_nodes 4 532480,0,532480,0 0,532480,0,532480 --set attention.backend=ring
                   --set attention.ring_type=zigzag --set sequence.length=100 --set sequence.batch=2
                   --set topology.ranks_per_node=2)
# The same step in bf16: blocks and accumulators travel in 16 bits, exactly half.
minictx_bytes_test(ring_zigzag_p4_two_nodes_bf16 4 266240,0,266240,0 0,266240,0,266240 --set attention.backend=ring
                   --set attention.ring_type=zigzag --set sequence.length=100 --set sequence.batch=2
                   --set topology.ranks_per_node=2 --set run.dtype=bf16)
# P=3, one node, forward only, 97 → 99, L=33, MHA n = 33·8·32 = 8448: 16·n = 135168.
minictx_bytes_test(ring_basic_p3_one_node_fwd 3 135168 0 --set attention.backend=ring --set sequence.length=97
                   --set model.kv_heads=8 --set run.fwd_only=true --set topology.ranks_per_node=3)
minictx_bytes_test(ring_basic_p3_one_node_fwd_fp16 3 67584 0 --set attention.backend=ring --set sequence.length=97
                   --set model.kv_heads=8 --set run.fwd_only=true --set topology.ranks_per_node=3 --set run.dtype=fp16)
# P=8, 2 per node, stripe 77 → 80, L=10, n = 10·4·32 = 1280: 176·n = 225280 from every
# rank, inter-node from the odd ones.
minictx_bytes_test(ring_stripe_p8_four_nodes 8 225280,0,225280,0,225280,0,225280,0
                   0,225280,0,225280,0,225280,0,225280 --set attention.backend=ring --set attention.ring_type=stripe
                   --set sequence.length=77 --set topology.ranks_per_node=2)
minictx_bytes_test(ring_basic_p1 1 0 0 --set attention.backend=ring --set sequence.length=50)

minictx_unit_test(test_ring_blocks minictx_core)
if(_h5py_python)
  add_test(NAME bytes_ring_selective_half_recompute
           COMMAND ${_h5py_python} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_half_recompute_bytes.py
                   $<TARGET_FILE:minictx> ${MPIEXEC_BIN})
  set_tests_properties(bytes_ring_selective_half_recompute PROPERTIES PASS_REGULAR_EXPRESSION "half recompute bytes ok"
                       PROCESSORS 4 TIMEOUT 120)
endif()

# A backend option the chosen backend does not read (issue 16 item 5): one line, every rank.
minictx_error_test(window_size_for_ring 2 "attention.window_size does not apply to attention.backend ring \\(it applies to double_ring\\)"
                   run --dry-run --set attention.backend=ring --set attention.window_size=2)
