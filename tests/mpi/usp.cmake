# The usp backend against the fp64 reference: every factorisation ulysses_degree ×
# ring_degree of 4 and 8 ranks, ring types basic/zigzag/stripe, causal and not, KV heads
# replicated (u > kv_heads), padding, batch > 1, model mode.

# Its representative configuration, which the feature suites run (support.cmake).
minictx_backend_config(usp usp_2x2 4 --set attention.ulysses_degree=2 --set attention.ring_type=zigzag)

set(_att --set run.mode=attention --set attention.backend=usp)
set(_model --set model.preset=tiny --set attention.backend=usp)
minictx_verify_test(usp_1x4_zigzag 4 ${_att} --set attention.ulysses_degree=1 --set attention.ring_type=zigzag
                    --set sequence.length=333 --set sequence.batch=2)
minictx_verify_test(usp_2x2_basic_full 4 ${_att} --set attention.ulysses_degree=2 --set attention.causal=false
                    --set sequence.length=1000)
minictx_verify_test(usp_2x2_zigzag 4 QUICK ${_att} --set attention.ulysses_degree=2 --set attention.ring_type=zigzag
                    --set sequence.length=1000)
minictx_verify_test(usp_2x2_stripe 4 ${_att} --set attention.ulysses_degree=2 --set attention.ring_type=stripe
                    --set sequence.length=333 --set sequence.batch=2)
minictx_verify_test(usp_4x1 4 ${_att} --set attention.ulysses_degree=4 --set sequence.length=333)
minictx_verify_test(usp_1x8_stripe 8 ${_att} --set attention.ulysses_degree=1 --set attention.ring_type=stripe
                    --set sequence.length=250)
minictx_verify_test(usp_2x4_zigzag_mha 8 ${_att} --set attention.ulysses_degree=2 --set attention.ring_type=zigzag
                    --set model.kv_heads=8 --set sequence.length=250)
minictx_verify_test(usp_4x2_zigzag_kv_replicated 8 ${_att} --set attention.ulysses_degree=4
                    --set attention.ring_degree=2 --set attention.ring_type=zigzag --set model.kv_heads=2
                    --set sequence.length=250)
minictx_verify_test(usp_4x2_basic_full 8 ${_att} --set attention.ulysses_degree=4 --set attention.causal=false
                    --set sequence.length=250)
minictx_verify_test(usp_8x1_kv_replicated_full 8 ${_att} --set attention.ulysses_degree=8 --set attention.causal=false
                    --set sequence.length=250 --set sequence.batch=2)
minictx_verify_test(usp_2x1_model 2 QUICK ${_model} --set attention.ulysses_degree=2 --set model.layers=2
                    --set sequence.length=300)
minictx_verify_test(usp_2x2_zigzag_model 4 ${_model} --set attention.ulysses_degree=2 --set attention.ring_type=zigzag
                    --set model.layers=1 --set sequence.length=257 --set sequence.batch=2)

minictx_error_test(usp_degrees_world 4 "usp needs ulysses_degree × ring_degree = world size, but 2 × 3" run
                   --set attention.backend=usp --set attention.ulysses_degree=2 --set attention.ring_degree=3)
minictx_error_test(usp_degree_world 4 "attention.ulysses_degree 8 does not divide the world size 4" run
                   --set attention.backend=usp --set attention.ulysses_degree=8)

# Bytes sent per rank in one step against the formulas at the top of the backend
# sources (ulysses, allgather and usp, which composes the Ulysses exchange with the ring
# engine).
# B=2, L=250, P=4, H=8, D=32, 2 KV heads replicated to s=1; the host device's LSE rows in
# two fp32 planes: 4·2·250·3·[(6·8/4 + 6)·32 + 2·2·8/4] = 3504000.
minictx_bytes_test(ulysses_4 4 3504000 0 --set attention.backend=ulysses --set sequence.length=1000
                   --set sequence.batch=2 --set model.kv_heads=2)
# bf16: the heads' data in 2 bytes, the LSE rows still in 2·4:
# 2·2·250·3·(6·8/4 + 6)·32 + 4·2·250·3·(2·2·8/4) = 1728000 + 48000 = 1776000.
minictx_bytes_test(ulysses_4_bf16 4 1776000 0 --set attention.backend=ulysses --set sequence.length=1000
                   --set sequence.batch=2 --set model.kv_heads=2 --set run.dtype=bf16)
# L=334 (1000 padded to 1002), P=3, Hkv=4, D=32: 24·334·4·32·2 = 2052096.
minictx_bytes_test(allgather_3 3 2052096 0 --set attention.backend=allgather --set sequence.length=1000)
# bf16, the reduce-scatter summing in 16 bits as well: exactly half.
minictx_bytes_test(allgather_3_bf16 3 1026048 0 --set attention.backend=allgather --set sequence.length=1000
                   --set run.dtype=bf16)
# u=2, r=2, L=250, H=8, s=2, D=32, two ranks per node so the Ulysses pairs stay on a
# node and the rings cross nodes: intra 4·250·1·[(24 + 12)·32 + 2·8] = 1168000 (the LSE in
# two planes), inter (24·2 − 16)·n with n = 2·250·2·32 = 32000 → 1024000.
minictx_bytes_test(usp_2x2 4 1168000 1024000 --set attention.backend=usp --set attention.ulysses_degree=2
                   --set attention.ring_type=zigzag --set sequence.length=1000 --set topology.ranks_per_node=2)
# bf16: intra 2·250·36·32 + 4·250·2·8 = 592000 (the LSE rows stay fp32), inter half: 512000.
minictx_bytes_test(usp_2x2_bf16 4 592000 512000 --set attention.backend=usp --set attention.ulysses_degree=2
                   --set attention.ring_type=zigzag --set sequence.length=1000 --set topology.ranks_per_node=2
                   --set run.dtype=bf16)
