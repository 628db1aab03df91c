#include "device/cuda/attention_common.cuh"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/flash_attention.hpp"
#include "device/cuda/flash_bwd_wgmma_tile.cuh"
#include "device/cuda/flash_rows.cuh"
#include "device/cuda/mma_fragments.cuh"
#include "device/cuda/tma_pipeline.cuh"
#include "device/cuda/wgmma_fragments.cuh"

// The backward's dK/dV pass with the TMA forward's division of labour (sm_90a), followed
// by the TMA-fed dQ pass (flash_bwd_dq_tma.cu). A block of three warpgroups owns 128 keys
// of one KV head. One warp of the producer warpgroup feeds it: its first lane copies the
// block's K and V once, then for every query tile it visits (every query head of the
// group, the visible tiles of kBr queries) the Q and dO tiles, with TMA; all its lanes
// copy the tile's LSE, delta and query positions, which no TMA box can address (their
// rows need not be 16-byte aligned). A stage is loaded when the copies' bytes have landed
// and the 32 lanes have arrived. The two consumer warpgroups own 64 keys each and run the
// wgmma backward's step on every query tile (flash_bwd_wgmma_tile.cuh), then free the
// stage. A Q/dO tile thus feeds 128 keys, twice the cp.async kernel's 64.
namespace minictx::cuda {
namespace {

using namespace attn;

constexpr int kConsumers = 2;                     // warpgroups of 64 keys
constexpr int kKeysPerBlock = 64 * kConsumers;    // wgmma's M per consumer
constexpr int kThreads = 128 * (kConsumers + 1);  // and the producer warpgroup
constexpr int kStages = 2;                        // query tiles in flight
// The producer's lanes also copy the query vectors, which spills at 24 registers; the
// consumers need 224 (ptxas: no spill, their wgmma not serialised).
constexpr int kProducerRegisters = 56, kConsumerRegisters = 224;
static_assert(tma::register_split_fits(kConsumers, kProducerRegisters, kConsumerRegisters),
              "the consumers claim no more registers than the producer gives up");

// Head dim → the query tile: dK and dV (kD / 2 registers a thread each) beside Sᵀ and dPᵀ
// (kBr / 2 each), as in the cp.async kernel.
template <int kD>
constexpr int kTmaQueryTile = kD == 64 ? 64 : 32;
static_assert(kTmaQueryTile<64> % kWarp == 0 && kTmaQueryTile<128> % kWarp == 0,
              "the producer's lanes copy whole rows of the query vectors");

template <int kD, int kBr>
struct TmaKvShape {
  static constexpr int kKvBytes = kKeysPerBlock * kD * 2;  // the block's K (and V)
  static constexpr int kQBytes = kBr * kD * 2;             // one stage of Q (and dO)
  // One stage of the query vectors: LSE and delta (fp32), positions (int64).
  static constexpr int kVectorBytes = kBr * (2 * 4 + 8);
  // Barriers: K/V loaded; per stage the query tile loaded, the stage free.
  static constexpr int kBarriers = 1 + 2 * kStages;
  static constexpr size_t kSharedBytes = wgmma::kAlignmentSlack +
                                         size_t(2 * kKvBytes + kStages * (2 * kQBytes + kVectorBytes)) +
                                         size_t(kBarriers) * 8;
};

template <int kD, int kBr, bool kBf16>
__global__ void __launch_bounds__(kThreads, 1)
    flash_bwd_tma_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                         const __grid_constant__ CUtensorMap v_map,
                         const __grid_constant__ CUtensorMap do_map, AttnArgs a,
                         const float* __restrict__ lse, const float* __restrict__ delta, float* dk,
                         float* dv) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Shape = TmaKvShape<kD, kBr>;
  constexpr int kQBytes = Shape::kQBytes;
  extern __shared__ unsigned char shared[];
  unsigned char* aligned = wgmma::aligned_tiles(shared);
  const uint32_t ks = mma::shared_address(aligned), vs = ks + Shape::kKvBytes, qs = vs + Shape::kKvBytes,
                 dos = qs + kStages * kQBytes;  // Q, dO: kStages each
  auto* lse_s = reinterpret_cast<float*>(aligned + 2 * Shape::kKvBytes + 2 * kStages * kQBytes);
  float* delta_s = lse_s + kStages * kBr;
  auto* qpos_s = reinterpret_cast<int64_t*>(delta_s + kStages * kBr);
  const uint32_t kv_loaded = mma::shared_address(qpos_s + kStages * kBr);
  auto queries_loaded = [&](int s) { return kv_loaded + 8u * uint32_t(1 + s); };
  auto stage_free = [&](int s) { return kv_loaded + 8u * uint32_t(1 + kStages + s); };

  const KeyTile tile = key_tile<kKeysPerBlock, kBr>(a);
  if (tile.steps == 0) return;  // padding keys only, or (causally) no query sees them

  if (threadIdx.x == 0) {
    tma::barrier_init(kv_loaded, 1);
    for (int s = 0; s < kStages; ++s) {
      tma::barrier_init(queries_loaded(s), 1 + kWarp);   // the copies' issuer, then every lane
      tma::barrier_init(stage_free(s), 4 * kConsumers);  // consumer warps
    }
    tma::fence_barrier_init();
  }
  __syncthreads();

  if (threadIdx.x < 128) {  // the producer warpgroup: its first warp works
    tma::release_registers<kProducerRegisters>();
    const int lane = int(threadIdx.x);
    if (lane >= kWarp) return;
    if (lane == 0) {
      tma::arrive_expect_bytes(kv_loaded, 2 * Shape::kKvBytes);
      tma::load_tile<kKeysPerBlock, kD>(ks, &k_map, kv_loaded, tile.g, tile.j0, tile.b);
      tma::load_tile<kKeysPerBlock, kD>(vs, &v_map, kv_loaded, tile.g, tile.j0, tile.b);
    }
    constexpr int kRowsPerLane = kBr / kWarp;
    for (int step = 0; step < tile.steps; ++step) {
      const int s = step % kStages, h = tile.head_of(step);
      const int64_t i0 = tile.query_row_of(step, kBr);
      const int tq = tile_rows(a.q_len - i0, kBr);
      // This lane's rows of the tile's vectors, read while the stage may still be in use;
      // rows past the tile are zero, as the cp.async kernel's (load_query_vectors).
      const int64_t vec = (int64_t(tile.b) * a.heads + h) * a.vec_len + a.q_begin + i0;
      float l[kRowsPerLane], dl[kRowsPerLane];
      int64_t pos[kRowsPerLane];
#pragma unroll
      for (int r = 0; r < kRowsPerLane; ++r) {
        const int i = lane + r * kWarp;
        const bool ok = i < tq;
        l[r] = ok ? lse[vec + i] : 0.0f;
        dl[r] = ok ? delta[vec + i] : 0.0f;
        pos[r] = ok ? a.q_pos[i0 + i] : 0;
      }
      tma::wait_or_trap(stage_free(s), ((step / kStages) & 1) ^ 1);  // the first round passes at once
      if (lane == 0) {
        tma::arrive_expect_bytes(queries_loaded(s), 2 * kQBytes);
        tma::load_tile<kBr, kD>(qs + s * kQBytes, &q_map, queries_loaded(s), h, i0, tile.b);
        tma::load_tile<kBr, kD>(dos + s * kQBytes, &do_map, queries_loaded(s), h, i0, tile.b);
      }
#pragma unroll
      for (int r = 0; r < kRowsPerLane; ++r) {
        const int i = s * kBr + lane + r * kWarp;
        lse_s[i] = l[r];
        delta_s[i] = dl[r];
        qpos_s[i] = pos[r];
      }
      tma::arrive(queries_loaded(s));  // releases this lane's stores to the waiting consumers
    }
    // The tail: every query tile consumed before the warp exits (tma_pipeline.cuh).
    for (int step = tile.steps > kStages ? tile.steps - kStages : 0; step < tile.steps; ++step)
      tma::wait_or_trap(stage_free(step % kStages), (step / kStages) & 1);
    return;
  }

  tma::claim_registers<kConsumerRegisters>();
  // Consumer warp w (0..7) holds keys 16w..16w+15 of the block, in warpgroup w / 4.
  const int warp = int(threadIdx.x) / kWarp - 4, lane = int(threadIdx.x) % kWarp;
  const int group = lane >> 2, tig = lane & 3;
  const uint32_t key_rows = uint32_t((warp / 4) * 64 * 128);  // the warpgroup's 64 keys of each slab
  WgmmaKeyRows<kD> rows = wgmma_key_rows<kD>(a, tile, warp, group);
  const bool ragged_keys = tile.tk < kKeysPerBlock || tile.last_key >= a.real_len;
  const float scale_log2 = a.scale * kLog2e;

  tma::wait(kv_loaded, 0);
  for (int step = 0; step < tile.steps; ++step) {
    const int s = step % kStages;
    tma::wait(queries_loaded(s), (step / kStages) & 1);
    const int64_t* qp = qpos_s + s * kBr;
    const int tq = tile_rows(a.q_len - tile.query_row_of(step, kBr), kBr);
    const bool masked = ragged_keys || tq < kBr || (a.causal && tile.last_key > qp[0]);
    wgmma_dkdv_tile<kKeysPerBlock, kBr, kD, kBf16>(rows, ks + key_rows, vs + key_rows, qs + s * kQBytes,
                                                   dos + s * kQBytes, lse_s + s * kBr, delta_s + s * kBr, qp,
                                                   masked, tq, tig, scale_log2, a);
    tma::arrive_for_warp(stage_free(s));  // this warp's reads of the stage are done
  }

  add_dk_dv<kD>(rows.dk, rows.dv, a, tile, dk, dv, warp, group, tig);
#else
  __trap();  // built without sm_90a: flash_wgmma_available() never chooses this kernel
#endif
}

template <int kD, bool kBf16>
void launch_dkdv_tma(const AttnArgs& a, const void* q, const void* k, const void* v, const void* dout,
                     const float* lse, const float* delta, float* dk, float* dv, cudaStream_t stream) {
  constexpr int kBr = kTmaQueryTile<kD>;
  using Shape = TmaKvShape<kD, kBr>;
  constexpr auto kernel = flash_bwd_tma_kernel<kD, kBr, kBf16>;
  allow_shared_memory<kernel>(Shape::kSharedBytes, "flash_bwd_tma shared memory");
  tma::check_register_split<kernel>(kConsumers, kProducerRegisters, kConsumerRegisters,
                                    "flash_bwd_tma registers");
  // The operands are compact [batch, len, heads, D] copies (flash_attention.hpp).
  const CUtensorMap q_map = tma::tile_map(q, kBf16, a.batch, a.q_len, a.heads, kD, kBr);
  const CUtensorMap do_map = tma::tile_map(dout, kBf16, a.batch, a.q_len, a.heads, kD, kBr);
  const CUtensorMap k_map = tma::tile_map(k, kBf16, a.batch, a.k_len, a.kv_heads, kD, kKeysPerBlock);
  const CUtensorMap v_map = tma::tile_map(v, kBf16, a.batch, a.k_len, a.kv_heads, kD, kKeysPerBlock);
  const dim3 grid(unsigned((a.k_len + kKeysPerBlock - 1) / kKeysPerBlock), unsigned(a.batch * a.kv_heads));
  kernel<<<grid, kThreads, Shape::kSharedBytes, stream>>>(q_map, k_map, v_map, do_map, a, lse, delta, dk, dv);
}

}  // namespace

FlashTiles flash_bwd_tma_tiles(int head_dim) {
  FlashTiles t = with_dq_tma_tiles(flash_tiles(head_dim));
  t.bwd_q = head_dim == 64 ? kTmaQueryTile<64> : kTmaQueryTile<128>;
  t.bwd_k = kKeysPerBlock;
  return t;
}

// dK/dV, then dQ, on the same stream.
void flash_bwd_tma(const AttnArgs& a, const void* q, const void* k, const void* v, const void* dout,
                   const float* lse, const float* delta, float* dq, float* dk, float* dv,
                   cudaStream_t stream) {
  for_flash_shape(a, [&](auto d, auto bf16) {
    launch_dkdv_tma<decltype(d)::value, decltype(bf16)::value>(a, q, k, v, dout, lse, delta, dk, dv, stream);
  });
  flash_bwd_dq_tma(a, q, k, v, dout, lse, delta, dq, stream);
}

}  // namespace minictx::cuda
