# The double_ring backend (LoongTrain 2D attention) against the fp64 reference: every
# ring_type, windows of 1, 2, 3 and 4 context ranks on 2, 4, 6 and 8 ranks with emulated
# nodes, Ulysses degrees 1, 2 and 4, GQA and MHA, causal and not, padded lengths, batch 2,
# the model stack under each checkpointing policy, its deck errors and its bytes.

# Its representative configuration, which the feature suites run (support.cmake).
minictx_backend_config(double_ring double_ring_p4_w2 4 --set attention.window_size=2 --set topology.ranks_per_node=2
                       --set attention.ring_type=zigzag)

set(_att --set run.mode=attention --set attention.backend=double_ring)
set(_model --set model.preset=tiny --set attention.backend=double_ring)
foreach(_type basic zigzag stripe)
  set(_t --set attention.ring_type=${_type})
  minictx_verify_test(double_ring_${_type}_p2_w1 2 QUICK ${_att} ${_t} --set attention.window_size=1
                      --set topology.ranks_per_node=1 --set sequence.length=97)
  minictx_verify_test(double_ring_${_type}_p4_w2 4 ${_att} ${_t} --set attention.window_size=2
                      --set topology.ranks_per_node=2 --set sequence.length=998)
  minictx_verify_test(double_ring_${_type}_p6_w3 6 ${_att} ${_t} --set topology.ranks_per_node=3
                      --set sequence.length=333 --set sequence.batch=2)
  minictx_verify_test(double_ring_${_type}_p6_w2 6 ${_att} ${_t} --set attention.window_size=2
                      --set topology.ranks_per_node=2 --set sequence.length=301 --set attention.block_q=16
                      --set attention.block_k=24)
  minictx_verify_test(double_ring_${_type}_p8_u2_w2 8 ${_att} ${_t} --set attention.ulysses_degree=2
                      --set attention.window_size=2 --set topology.ranks_per_node=4 --set sequence.length=500)
  minictx_verify_test(double_ring_${_type}_p8_w4_mha_full 8 ${_att} ${_t} --set attention.window_size=4
                      --set topology.ranks_per_node=4 --set model.kv_heads=8 --set attention.causal=false
                      --set sequence.length=250)
endforeach()
minictx_verify_test(double_ring_zigzag_p8_w1 8 ${_att} --set attention.ring_type=zigzag --set attention.window_size=1
                    --set topology.ranks_per_node=2 --set sequence.length=250)
minictx_verify_test(double_ring_zigzag_p8_u4_w1_kv_replicated 8 ${_att} --set attention.ring_type=zigzag
                    --set attention.ulysses_degree=4 --set attention.window_size=1 --set model.kv_heads=2
                    --set topology.ranks_per_node=4 --set sequence.length=250)
minictx_verify_test(double_ring_zigzag_p4_single_device 4 ${_att} --set attention.ring_type=zigzag
                    --set attention.window_size=2 --set topology.ranks_per_node=2 --set sequence.length=998
                    --reference single-device)
foreach(_ckpt none full selective)
  minictx_verify_test(double_ring_model_p4_w2_${_ckpt} 4 ${_model} --set attention.ring_type=zigzag
                      --set attention.window_size=2 --set topology.ranks_per_node=2 --set model.layers=2
                      --set run.checkpointing=${_ckpt} --set sequence.length=201 --set sequence.batch=2)
endforeach()
minictx_verify_test(double_ring_model_p4_w2_selective_half 4 ${_model} --set attention.ring_type=stripe
                    --set attention.window_size=2 --set topology.ranks_per_node=2 --set model.layers=2
                    --set run.checkpointing=selective_half --set sequence.length=201 --set sequence.batch=2)

minictx_error_test(double_ring_window 4 "attention.window_size 3 does not divide the context size 4" verify
                   --set attention.backend=double_ring --set attention.window_size=3)
minictx_error_test(double_ring_node_window 6 "window_size 4 \\(the context ranks of one node\\) does not divide the context size 6"
                   verify --set attention.backend=double_ring --set topology.ranks_per_node=4)
minictx_error_test(double_ring_degrees 4 "double_ring needs ulysses_degree × ring_degree \\(the context size\\) = world size, but 2 × 3"
                   run --set attention.backend=double_ring --set attention.ulysses_degree=2 --set attention.ring_degree=3)

# 8 ranks, 4 per node, windows of 4 = one node each (W = 2, w = 4), zigzag 1000 → 1008,
# L = 126, n = 126·4·32 = 16128. Inner (intra-node): 8·2·3·n + 4·2·14·n = 160·n = 2580480;
# outer (inter-node): 8·1·n + 4·6·n = 32·n = 516096.
minictx_bytes_test(double_ring_p8_w4 8 2580480 516096 --set attention.backend=double_ring --set attention.window_size=4
                   --set topology.ranks_per_node=4 --set attention.ring_type=zigzag --set sequence.length=1000)
# bf16: half of both.
minictx_bytes_test(double_ring_p8_w4_bf16 8 1290240 258048 --set attention.backend=double_ring
                   --set attention.window_size=4 --set topology.ranks_per_node=4 --set attention.ring_type=zigzag
                   --set sequence.length=1000 --set run.dtype=bf16)
