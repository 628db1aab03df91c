# The burst backend (BurstAttention) against the fp64 reference: intra ring (a double
# ring with one window per emulated node) and intra ulysses, every ring_type, the Burst
# backward (bwd_comm q) and the ring backward (kv), on 2, 4, 6 and 8 ranks with 2 to 4
# emulated nodes, GQA and MHA, causal and not, padded lengths, the model stack under each
# checkpointing policy, its deck errors and its bytes.

# Its representative configurations, which the feature suites run (support.cmake): both
# backwards with intra ring, and intra ulysses, on 2 emulated nodes.
foreach(_bwd q kv)
  minictx_backend_config(burst burst_${_bwd}_p4_n2 4 --set attention.bwd_comm=${_bwd} --set topology.ranks_per_node=2
                         --set attention.ring_type=zigzag)
endforeach()
minictx_backend_config(burst burst_ulysses_p4_n2 4 --set attention.intra=ulysses --set topology.ranks_per_node=2)

set(_att --set run.mode=attention --set attention.backend=burst)
set(_model --set model.preset=tiny --set attention.backend=burst)
# The quick label: every ring_type with intra ring on 2 ranks, intra ulysses once.
set(_quick_zigzag_q QUICK)
foreach(_type basic zigzag stripe)
  set(_t --set attention.ring_type=${_type})
  foreach(_bwd q kv)
    set(_b --set attention.bwd_comm=${_bwd})
    minictx_verify_test(burst_ring_${_type}_${_bwd}_p4_n2 4 ${_att} ${_t} ${_b} --set topology.ranks_per_node=2
                        --set sequence.length=998)
    minictx_verify_test(burst_ulysses_${_type}_${_bwd}_p4_n2 4 ${_quick_${_type}_${_bwd}} ${_att} ${_t} ${_b}
                        --set attention.intra=ulysses --set topology.ranks_per_node=2 --set sequence.length=998)
  endforeach()
  minictx_verify_test(burst_ring_${_type}_p2_n2 2 QUICK ${_att} ${_t} --set topology.ranks_per_node=1
                      --set sequence.length=97)
  minictx_verify_test(burst_ring_${_type}_p6_n2 6 ${_att} ${_t} --set topology.ranks_per_node=3
                      --set sequence.length=333 --set sequence.batch=2)
  minictx_verify_test(burst_ring_${_type}_p8_n4 8 ${_att} ${_t} --set topology.ranks_per_node=2
                      --set sequence.length=500 --set attention.block_q=16 --set attention.block_k=24)
  minictx_verify_test(burst_ulysses_${_type}_p6_n3 6 ${_att} ${_t} --set attention.intra=ulysses
                      --set topology.ranks_per_node=2 --set sequence.length=301)
  minictx_verify_test(burst_ulysses_${_type}_p8_n2_mha_full 8 ${_att} ${_t} --set attention.intra=ulysses
                      --set topology.ranks_per_node=4 --set model.kv_heads=8 --set attention.causal=false
                      --set sequence.length=250)
endforeach()
minictx_verify_test(burst_ulysses_zigzag_p8_n2_kv_replicated 8 ${_att} --set attention.ring_type=zigzag
                    --set attention.intra=ulysses --set topology.ranks_per_node=4 --set model.kv_heads=2
                    --set sequence.length=250)
minictx_verify_test(burst_ring_zigzag_p4_single_device 4 ${_att} --set attention.ring_type=zigzag
                    --set topology.ranks_per_node=2 --set sequence.length=998 --reference single-device)
foreach(_intra ring ulysses)
  foreach(_ckpt none full selective)
    minictx_verify_test(burst_${_intra}_model_p4_${_ckpt} 4 ${_model} --set attention.intra=${_intra}
                        --set attention.ring_type=zigzag --set topology.ranks_per_node=2 --set model.layers=2
                        --set run.checkpointing=${_ckpt} --set sequence.length=201 --set sequence.batch=2)
  endforeach()
endforeach()
# BurstAttention's seq-wise selective checkpointing: with stripe, the recompute runs the
# double ring (intra: ring) for the first half of every rank's queries; odd local length
# (201 → 204 over 4 ranks: 51 rows, 25 recomputed), bwd_comm q and kv.
foreach(_bwd q kv)
  minictx_verify_test(burst_ring_model_p4_selective_half_${_bwd} 4 ${_model} --set attention.intra=ring
                      --set attention.ring_type=stripe --set attention.bwd_comm=${_bwd} --set topology.ranks_per_node=2
                      --set model.layers=2 --set run.checkpointing=selective_half --set sequence.length=201
                      --set sequence.batch=2)
endforeach()
minictx_verify_test(burst_ring_model_p8_n4_selective_half_full 8 ${_model} --set attention.intra=ring
                    --set attention.ring_type=stripe --set topology.ranks_per_node=2 --set model.layers=1
                    --set attention.causal=false --set run.checkpointing=selective_half --set sequence.length=250)
minictx_error_test(burst_selective_half_ulysses 4 "selective_half recomputes half the query rows through a ring without a head exchange; attention.backend burst with Ulysses degree 2 cannot"
                   verify ${_model} --set attention.intra=ulysses --set attention.ring_type=stripe
                   --set topology.ranks_per_node=2 --set run.checkpointing=selective_half)

minictx_error_test(burst_whole_nodes 6 "burst with intra: ulysses needs whole nodes, but the world size 6 is not a multiple of ranks_per_node 4"
                   verify --set attention.backend=burst --set attention.intra=ulysses --set topology.ranks_per_node=4)
minictx_error_test(burst_ulysses_heads 3 "attention.intra ulysses over ranks_per_node 3"
                   verify --set attention.backend=burst --set attention.intra=ulysses --set topology.ranks_per_node=3)
minictx_error_test(burst_ulysses_degree 4 "burst takes its Ulysses degree from the topology"
                   run --set attention.backend=burst --set attention.ulysses_degree=4 --set topology.ranks_per_node=2)

# The Burst backward against the ring backward on one plain ring (4 ranks, one node),
# MHA, basic 1000: L = 250, n = m = 250·8·32 = 64000, B·L·H = 2000; the LSE in two fp32
# planes (the host device) and D: 3·2000 floats beside Q and dO.
# forward 8·3·n = 1536000; backward q 4·[3·(2m + 3·2000) + 4·m] = 2632000 (total 4168000);
# backward kv 4·14·n = 3584000 (total 5120000): the q backward sends 0.734 of kv's.
minictx_bytes_test(burst_q_p4 4 4168000 0 --set attention.backend=burst --set topology.ranks_per_node=4
                   --set model.kv_heads=8 --set sequence.length=1000)
minictx_bytes_test(burst_kv_p4 4 5120000 0 --set attention.backend=burst --set attention.bwd_comm=kv
                   --set topology.ranks_per_node=4 --set model.kv_heads=8 --set sequence.length=1000)
# bf16: forward 768000; backward q 2·[3·2m + 4m] + 4·3·3·2000 = 1352000 (LSE and D stay
# fp32; total 2120000); backward kv exactly half of fp32's (total 2560000).
minictx_bytes_test(burst_q_p4_bf16 4 2120000 0 --set attention.backend=burst --set topology.ranks_per_node=4
                   --set model.kv_heads=8 --set sequence.length=1000 --set run.dtype=bf16)
minictx_bytes_test(burst_kv_p4_bf16 4 2560000 0 --set attention.backend=burst --set attention.bwd_comm=kv
                   --set topology.ranks_per_node=4 --set model.kv_heads=8 --set sequence.length=1000
                   --set run.dtype=bf16)
# intra ring over 4 nodes of 2 (W = 4, w = 2), GQA, zigzag 1000 → 1008, L = 126,
# n = 126·4·32 = 16128, m = 126·8·32 = 32256, block of the q backward 2m + 3·1008 = 67536:
# intra 8·4·1·n + 4·4·(67536 + 2·m) = 516096 + 2112768 = 2628864,
# inter 8·3·n + 4·(3·67536 + 4·m) = 387072 + 1326528 = 1713600.
minictx_bytes_test(burst_ring_p8_n4 8 2628864 1713600 --set attention.backend=burst --set topology.ranks_per_node=2
                   --set attention.ring_type=zigzag --set sequence.length=1000)
