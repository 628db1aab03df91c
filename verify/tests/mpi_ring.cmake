# The ring backend (backends/ring): every ring_type on 1, 2, 3, 4 and 8 ranks against the
# fp64 reference, causal and not, GQA and MHA, lengths the layouts must pad, batch 2,
# the model stack (with checkpointing), the single-device reference, its deck errors,
# the bytes it sends, and (test_ring_bytes) its active-block rules and message pattern.
set(_attn --set run.mode=attention --set attention.backend=ring)
set(_model --set model.preset=tiny --set attention.backend=ring)

# Lengths per ring size that no ring_type divides evenly (zigzag needs a multiple of 2P).
set(_len_1 97)
set(_len_2 999)
set(_len_3 333)
set(_len_4 998)
set(_len_8 500)
foreach(_type basic zigzag stripe)
  set(_t --set attention.ring_type=${_type})
  foreach(_p 1 2 3 4 8)
    minictx_verify_test(ring_${_type}_p${_p} ${_p} ${_attn} ${_t} --set sequence.length=${_len_${_p}})
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
  minictx_verify_test(ring_${_type}_model_p2 2 ${_model} ${_t} --set model.layers=2 --set sequence.length=150)
  minictx_verify_test(ring_${_type}_model_p4 4 ${_model} ${_t} --set model.layers=1 --set sequence.length=201
                      --set sequence.batch=2)
endforeach()
minictx_verify_test(ring_model_p3_mha_full 3 ${_model} --set attention.ring_type=zigzag --set model.layers=1
                    --set model.kv_heads=8 --set attention.causal=false --set sequence.length=100)
minictx_verify_test(ring_model_p3_ckpt_full 3 ${_model} --set attention.ring_type=zigzag --set model.layers=2
                    --set run.checkpointing=full --set sequence.length=100)
minictx_verify_test(ring_zigzag_p4_single_device 4 ${_attn} --set attention.ring_type=zigzag
                    --set sequence.length=998 --reference single-device)

minictx_error_test(ring_ulysses_degree 2 "attention.backend ring takes no ulysses_degree \\(got 2\\); use usp"
                   verify --set attention.backend=ring --set attention.ulysses_degree=2)
minictx_error_test(ring_ring_degree 2 "not ring_degree 4" verify --set attention.backend=ring
                   --set attention.ring_degree=4)

# Bytes sent per rank against the formulas in backends/ring/ring_engine.cpp, with the
# intra/inter-node split of emulated nodes. Debian's python3-h5py lives in /usr/bin.
find_program(MINICTX_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(MINICTX_PYTHON3 NAMES python3 REQUIRED)
function(ring_bytes_test name ranks per_node)
  add_test(NAME ring_bytes_${name}
           COMMAND ${MINICTX_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_ring_bytes.py ${MPIEXEC_BIN}
                   $<TARGET_FILE:minictx> ${ranks} ${per_node} ${ARGN})
  set_tests_properties(ring_bytes_${name} PROPERTIES LABELS "mpi;bytes" PROCESSORS ${ranks} TIMEOUT 120)
endfunction()
ring_bytes_test(zigzag_p4_two_nodes 4 2 --set attention.ring_type=zigzag --set sequence.length=100
                --set sequence.batch=2)
ring_bytes_test(basic_p3_one_node_fwd 3 3 --set sequence.length=97 --set model.kv_heads=8 --set run.fwd_only=true)
ring_bytes_test(stripe_p8_four_nodes 8 2 --set attention.ring_type=stripe --set sequence.length=77)
ring_bytes_test(basic_p1 1 1 --set sequence.length=50)

minictx_unit_test(test_ring_bytes minictx_core)
