#include <cstdint>
#include <string>

#include "core/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "device/cuda/attention_common.cuh"
#include "device/cuda/flash_attention.hpp"
#include "device/cuda/flash_bwd_sm90_tile.cuh"
#include "device/cuda/flash_query_stream_sm90.cuh"
#include "device/cuda/flash_rows.cuh"
#include "device/cuda/tma_pipeline.cuh"
#include "device/cuda/wgmma_fragments.cuh"

// The backward in one kernel, on FlashAttention-3's plan for Hopper (sm_90a): a block of
// three warpgroups owns 128 keys of one KV head and walks the query tiles of 64 that see
// them, for every query head of its group. The producer warpgroup gives its registers up;
// one of its threads loads the block's K and V tiles once and streams the Q and dO tiles
// with TMA through a ring of stages, one of its warps the tiles' positions, LSE and delta,
// and one adds each step's dQ to global memory (flash_query_stream_sm90.cuh). The two
// consumer warpgroups own 64 keys each and run the five products of every query tile:
// Sᵀ = K Qᵀ and dPᵀ = V dOᵀ (issued together), Pᵀ and dSᵀ formed in registers
// (flash_rows.cuh, as the two-pass kernels do), dV += Pᵀ dO and dK += dSᵀ Q from
// registers, and dQ = dS K, each consumer its half of dQ's columns over the block's 128
// keys: both store their dSᵀ, transposed, into a shared dS tile, meet at a named barrier
// and read it back as dQ's A operand. They write the tile's dQ, times the softmax scale,
// into shared memory, and the producer's dQ warp adds it row by row to the fp32 dq in
// global memory with bulk reduce-adds (atomic against the blocks of the other key tiles,
// which add to the same rows): dq accumulates across calls as with the two-pass backward,
// and no second pass recomputes S and dP. Blocks are launched key tile by key tile, every
// (batch, KV head) of a key tile together: causally the first key tiles see the most
// queries, and they start first (longest first). Packed documents are split into
// per-document blocks by the device (this family does not mask them in the kernel).
namespace minictx::cuda {
namespace {

using namespace attn;

using Block = tma::KeyBlock;
constexpr int kKeys = Block::kKeys, kQueryTile = Block::kQueryTile;
static_assert(sm90_onepass_tiles(64).bwd_k == kKeys && sm90_onepass_tiles(64).bwd_q == kQueryTile,
              "the family table prints the tiles this kernel runs");
static_assert(kQueryTile == 64, "dQ's rows are one wgmma M of 64");

// A consumer's columns of dQ (one of kConsumers equal shares of the head dim) start inside
// the K tile's first 64-column slab at D = 64 (an MN-major descriptor starting 64 bytes
// into its swizzle span, as a K-major k-step does): the hardware's reading of it is the
// tile's layout, element by element.
template <int kRows, int kColumn, int kN>
constexpr bool column_share_described() {
  constexpr int start = wgmma::swizzled_offset<kRows>(0, kColumn);
  for (int kc = 0; kc < kRows / 16; ++kc)
    for (int k = 0; k < 16; ++k)
      for (int n = 0; n < kN; ++n)
        if (wgmma::mn_major_address(wgmma::mn_major_start<kRows>(kc) + start,
                                    wgmma::mn_major_leading_bytes<kRows>(), k,
                                    n) != wgmma::swizzled_offset<kRows>(kc * 16 + k, kColumn + n))
          return false;
  return true;
}
static_assert(column_share_described<kKeys, 32, 32>() && column_share_described<kKeys, 64, 64>(),
              "dQ's column shares of the K tile and their descriptors disagree");

// A consumer warp's dSᵀ (A fragments: its 16 keys, from key0 of the block, × the query
// tile), stored transposed into the swizzled dS tile of kBr query rows × kKeys keys, the
// K-major A operand of dQ = dS K. 16-bit stores: a warp's lanes write 4 rows × 16 bytes a
// store, 4 rows whose swizzled chunks fall in different banks.
template <int kBr>
__device__ __forceinline__ void store_ds(const uint32_t (&dsa)[kBr / 16][4], unsigned char* ds, int key0,
                                         int group, int tig) {
#pragma unroll
  for (int kc = 0; kc < kBr / 16; ++kc)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int key = key0 + group + 8 * (r & 1), query = 16 * kc + 8 * (r >> 1) + 2 * tig;
      const uint32_t bits = dsa[kc][r];
      *reinterpret_cast<uint16_t*>(ds + wgmma::swizzled_offset<kBr>(query, key)) = uint16_t(bits & 0xffffu);
      *reinterpret_cast<uint16_t*>(ds + wgmma::swizzled_offset<kBr>(query + 1, key)) = uint16_t(bits >> 16);
    }
}

// Issues consumer c's share of dQ = dS K (columns c·D/kConsumers.. of the head dim; dS
// from the shared tile ds, K's rows the contracted dim) as one committed group.
template <int kD, bool kBf16>
__device__ __forceinline__ void issue_dq(float (&dq)[kD / 16][4], uint32_t ds, uint32_t ks, int consumer) {
  constexpr int kN = kD / Block::kConsumers;
  static_assert(kN == 32 || kN == 64, "a consumer's share of dQ is an MN-major N of 32 or 64");
#pragma unroll
  for (int n = 0; n < kN / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dq[n][e] = 0.0f;
  const uint32_t k_columns = ks + uint32_t(wgmma::swizzled_offset<kKeys>(0, consumer * kN));
  wgmma::fence_operands(dq);
  wgmma::fence();
#pragma unroll
  for (int kc = 0; kc < kKeys / 16; ++kc)
    wgmma::mma_ss<kN, kBf16, true>(dq, wgmma::k_major<kQueryTile>(ds, kc),
                                   wgmma::mn_major<kKeys>(k_columns, kc));
  wgmma::commit();
}

// Writes a consumer warp's share of a step's dQ (times the softmax scale: rows 16·warp..
// of the tile, the consumer's columns) into the stream's dQ tile.
template <int kD, class Stream>
__device__ __forceinline__ void write_dq_share(const float (&acc)[kD / 16][4], const Stream& qs, float scale,
                                               int consumer, int warp, int group, int tig) {
  constexpr int kN = kD / Block::kConsumers;
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    float* row = qs.dq_row(warp * 16 + group + rr * 8) + consumer * kN;
#pragma unroll
    for (int n = 0; n < kN / 8; ++n)
      *reinterpret_cast<float2*>(row + n * 8 + 2 * tig) =
          float2{scale * acc[n][2 * rr], scale * acc[n][2 * rr + 1]};
  }
}

template <int kD, bool kBf16>
__global__ void __launch_bounds__(Block::kThreads, 1)
    flash_bwd_onepass_kernel(const __grid_constant__ CUtensorMap q_map,
                             const __grid_constant__ CUtensorMap k_map,
                             const __grid_constant__ CUtensorMap v_map,
                             const __grid_constant__ CUtensorMap do_map, AttnArgs a,
                             const float* __restrict__ lse, const float* __restrict__ delta, float* dq,
                             float* dk, float* dv) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Stream = Block::Stream<kD>;
  extern __shared__ unsigned char shared[];
  unsigned char* aligned = wgmma::aligned_tiles(shared);
  const uint32_t ks = mma::shared_address(aligned), vs = ks + Block::kKeyTileBytes<kD>,
                 ds = ks + Block::kDsOffset<kD>;
  const Stream qs(aligned + Block::kStreamOffset<kD>);

  // Key tile by key tile, every (batch, KV head) of one together: longest first.
  const int heads_of_batches = a.batch * a.kv_heads;
  const KeyTile tile =
      key_tile<kKeys, kQueryTile>(a, int(blockIdx.x) / heads_of_batches, int(blockIdx.x) % heads_of_batches);
  if (tile.steps == 0) return;  // padding keys only, or (causally) no query sees them

  if (Block::produce<kD>(
          qs, &q_map, &do_map, tile.b, tile.steps,
          [&] {
            tma::arrive_expect_bytes(qs.resident_loaded(), 2 * Block::kKeyTileBytes<kD>);
            tma::load_tile<kKeys, kD>(ks, &k_map, qs.resident_loaded(), tile.g, tile.j0, tile.b);
            tma::load_tile<kKeys, kD>(vs, &v_map, qs.resident_loaded(), tile.g, tile.j0, tile.b);
          },
          [&](int step) {
            return tma::QueryTileAt{tile.head_of(step), tile.query_row_of(step, kQueryTile)};
          },
          [&](int step, int lane) {
            const int h = tile.head_of(step);
            const int64_t i0 = tile.query_row_of(step, kQueryTile);
            const int tq = tile_rows(a.q_len - i0, kQueryTile);
            const int64_t vec = (int64_t(tile.b) * a.heads + h) * a.vec_len + a.q_begin + i0;
            for (int i = lane; i < kQueryTile; i += Stream::kLanes) {
              const bool ok = i < tq;  // rows past the tile: masked (the step is then masked)
              qs.positions(step)[i] = ok ? a.q_pos[i0 + i] : kNoPosition;
              qs.lse(step)[i] = ok ? lse[vec + i] : 0.0f;
              qs.delta(step)[i] = ok ? delta[vec + i] : 0.0f;
            }
          },
          [&](int step, int r) -> float* {
            const int64_t i0 = tile.query_row_of(step, kQueryTile);
            if (r >= tile_rows(a.q_len - i0, kQueryTile)) return nullptr;
            return dq +
                   ((int64_t(tile.b) * a.o_rows + a.q_begin + i0 + r) * a.heads + tile.head_of(step)) * kD;
          }))
    return;

  // Consumer warp w (0..7) holds keys 16w..16w+15 of the block, in warpgroup w / 4.
  const int warp = int(threadIdx.x) / kWarp - 4, lane = int(threadIdx.x) % kWarp;
  const int group = lane >> 2, tig = lane & 3, consumer = warp / 4, wg_warp = warp % 4;
  KeyTile mine = tile;  // the consumer's 64 keys
  mine.j0 += 64 * consumer;
  mine.tk -= 64 * consumer;
  WgmmaKeyRows<kD> rows = wgmma_key_rows<kD>(a, mine, wg_warp, group);
  const uint32_t k_rows = ks + uint32_t(consumer * 64 * 128), v_rows = vs + uint32_t(consumer * 64 * 128);
  const bool ragged_keys = tile.tk < kKeys || tile.last_key >= a.real_len;
  const float scale_log2 = a.scale * kLog2e;

  tma::wait(qs.resident_loaded(), 0);
  for (int step = 0; step < tile.steps; ++step) {
    const int tq = tile_rows(a.q_len - tile.query_row_of(step, kQueryTile), kQueryTile);
    qs.wait_loaded(step);
    const int64_t* qp = qs.positions(step);
    const bool masked = ragged_keys || tq < kQueryTile || (a.causal && tile.last_key > qp[0]);

    float s[kQueryTile / 8][4], dp[kQueryTile / 8][4];
    scores_and_dp<kKeys, kQueryTile, kD, kBf16>(s, dp, k_rows, qs.q_tile(step), v_rows, qs.do_tile(step));
    uint32_t pa[kQueryTile / 16][4], dsa[kQueryTile / 16][4];
    form_pt_dst<kQueryTile, kBf16>(s, dp, qs.lse(step), qs.delta(step), qp, rows.kpos, masked, tq, tig,
                                   scale_log2, a, pa, dsa);

    // dS into this step's tile (the other step's may still be read by the other
    // consumer), made visible to wgmma; dK and dV run while the consumers meet.
    const int ds_step = (step & 1) * Block::kDsTileBytes;
    store_ds<kQueryTile>(dsa, aligned + Block::kDsOffset<kD> + ds_step, warp * 16, group, tig);
    wgmma::fence_shared_for_async();
    issue_dk_dv<kQueryTile, kD, kBf16>(rows, pa, dsa, qs.q_tile(step), qs.do_tile(step));
    tma::named_sync<1, 128 * Block::kConsumers>();
    // dQ issued behind dK and dV; the stage is freed once they have landed.
    float dq_acc[kD / 16][4];
    issue_dq<kD, kBf16>(dq_acc, ds + uint32_t(ds_step), ks, consumer);
    wgmma::wait<1>();
    wgmma::fence_operands(rows.dk);
    wgmma::fence_operands(rows.dv);
    wgmma::fence_operands(pa);
    wgmma::fence_operands(dsa);
    qs.free_stage(step);  // its Q and dO tiles and vectors are read
    wgmma::wait<0>();
    wgmma::fence_operands(dq_acc);
    qs.wait_dq_free(step);
    write_dq_share<kD>(dq_acc, qs, a.scale, consumer, wg_warp, group, tig);
    qs.hand_dq_over();
  }

  add_dk_dv<kD>(rows.dk, rows.dv, a, mine, dk, dv, wg_warp, group, tig);
#else
  __trap();  // built without sm_90a: flash_sm90_available() never chooses this kernel
#endif
}

template <int kD, bool kBf16>
void launch_onepass(const AttnArgs& a, const void* q, const void* k, const void* v, const void* dout,
                    const float* lse, const float* delta, float* dq, float* dk, float* dv,
                    cudaStream_t stream) {
  constexpr auto kernel = flash_bwd_onepass_kernel<kD, kBf16>;
  constexpr size_t kSharedBytes = Block::kSharedBytes<kD>;
  allow_shared_memory<kernel>(kSharedBytes, "flash_bwd_onepass shared memory");
  Block::check_registers<kernel>("flash_bwd_onepass registers");
  // The dQ warp's bulk reduce-adds write 16-byte aligned rows.
  if (reinterpret_cast<uintptr_t>(dq) % 16 != 0)
    fail(rank_label() + ": the one-pass backward's dq starts " +
         std::to_string(reinterpret_cast<uintptr_t>(dq) % 16) +
         " bytes past a 16-byte boundary (its rows are added by 16-byte bulk copies)");
  // The operands are compact [batch, len, heads, D] copies (flash_attention.hpp).
  const CUtensorMap q_map = tma::tile_map(q, kBf16, a.batch, a.q_len, a.heads, kD, kQueryTile);
  const CUtensorMap do_map = tma::tile_map(dout, kBf16, a.batch, a.q_len, a.heads, kD, kQueryTile);
  const CUtensorMap k_map = tma::tile_map(k, kBf16, a.batch, a.k_len, a.kv_heads, kD, kKeys);
  const CUtensorMap v_map = tma::tile_map(v, kBf16, a.batch, a.k_len, a.kv_heads, kD, kKeys);
  const int64_t blocks = (a.k_len + kKeys - 1) / kKeys * a.batch * a.kv_heads;
  kernel<<<unsigned(blocks), Block::kThreads, kSharedBytes, stream>>>(q_map, k_map, v_map, do_map, a, lse,
                                                                      delta, dq, dk, dv);
}

}  // namespace

void flash_bwd_sm90_onepass(const AttnArgs& a, const void* q, const void* k, const void* v, const void* dout,
                            const float* lse, const float* delta, float* dq, float* dk, float* dv,
                            cudaStream_t stream) {
  for_flash_shape(a, [&](auto d, auto bf16) {
    launch_onepass<decltype(d)::value, decltype(bf16)::value>(a, q, k, v, dout, lse, delta, dq, dk, dv,
                                                              stream);
  });
}

}  // namespace minictx::cuda
