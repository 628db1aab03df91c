#pragma once
#include <cmath>
#include <cstdint>

#include "device/cuda/attention_common.cuh"
#include "device/cuda/flash_rows.cuh"
#include "device/cuda/mma_fragments.cuh"
#include "device/cuda/wgmma_fragments.cuh"

// The forward's work on one key tile for a warpgroup's 64 queries on Hopper's warpgroup
// MMA (flash_fwd_sm90.cu): S = QKᵀ from shared memory, the mask and the online softmax in
// registers, O += PV with P in registers and V from shared memory.
namespace minictx::cuda::attn {

// A thread's two query rows (group and group + 8 of its warp's 16): their positions, the
// online softmax's running maximum and sum, and the output accumulator.
template <int kD>
struct WgmmaForwardRows {
  int64_t qpos[2];
  float row_max[2], row_sum[2];
  float acc[1][kD / 8][4];
};

// The rows of consumer warp `warp` (rows 16·warp.. of a query tile of tq rows from i0),
// before any key tile: rows past the tile take the last row's position (nothing stores
// them).
template <int kD>
__device__ __forceinline__ WgmmaForwardRows<kD> wgmma_forward_rows(const AttnArgs& a, int64_t i0, int tq,
                                                                   int warp, int group) {
  WgmmaForwardRows<kD> r;
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    r.qpos[rr] = a.q_pos[i0 + min(row_of<1>(warp, group, rr), tq - 1)];
    r.row_max[rr] = -INFINITY;
    r.row_sum[rr] = 0.0f;
  }
#pragma unroll
  for (int n = 0; n < kD / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) r.acc[0][n][e] = 0.0f;
  return r;
}

// The steps of one key tile t (kBc keys) for the warpgroup whose 64 query rows start at
// q_rows in a Q tile of kQRows rows. As FlashAttention-3 does, the kernel issues tile t's
// scores and tile t − 1's PV product together and runs tile t's softmax while the PV
// product is in flight.

// Issues S = QKᵀ against the swizzled K tile kt, as one committed wgmma group; S is the
// warpgroup's to read once that group is waited for.
template <int kQRows, int kBc, int kD, bool kBf16>
__device__ __forceinline__ void issue_scores(float (&s)[1][kBc / 8][4], uint32_t q_rows, uint32_t kt) {
#pragma unroll
  for (int n = 0; n < kBc / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) s[0][n][e] = 0.0f;
  wgmma::fence_operands(s[0]);
  wgmma::fence();
#pragma unroll
  for (int kc = 0; kc < kD / 16; ++kc)
    wgmma::mma_ss<kBc, kBf16>(s[0], wgmma::k_major<kQRows>(q_rows, kc), wgmma::k_major<kBc>(kt, kc));
  wgmma::commit();
}

// The mask and the online softmax's statistics on key tile t's scores (kp: the tile's key
// positions; first_query: the position of the block's first query, for the causal test);
// rescaled(rr, factor) is told each row's factor for the output accumulated before. With
// documents (kDocs), the tiles start at key row key_first and every tile is masked by the
// rows' spans.
template <int kBc, int kD, bool kDocs = false, class Rescaled>
__device__ __forceinline__ void score_softmax(float (&s)[1][kBc / 8][4], WgmmaForwardRows<kD>& r,
                                              const int64_t* kp, int t, int64_t first_query,
                                              const AttnArgs& a, float scale_log2, int tig,
                                              Rescaled&& rescaled, int64_t key_first = 0,
                                              const RowSpans<2>* spans = nullptr) {
  // Only tiles that reach padding, the block's end or (causally) past the first query
  // need the per-element mask.
  const int valid = tile_rows(a.k_len - key_first - int64_t(t) * kBc, kBc);
  const int64_t last_key = kp[valid - 1];
  if (kDocs || valid < kBc || last_key >= a.real_len || (a.causal && last_key > first_query))
    mask_scores<1, kBc, kDocs>(s, a, kp, r.qpos, valid, tig, spans);
  softmax_step<1, kBc>(s, r.row_max, r.row_sum, scale_log2, rescaled);
}

// P, rounded to the operand type, as the A fragments of O += PV.
template <int kBc, bool kBf16>
__device__ __forceinline__ void probabilities_as_a(const float (&s)[1][kBc / 8][4],
                                                   uint32_t (&pa)[kBc / 16][4]) {
#pragma unroll
  for (int kc = 0; kc < kBc / 16; ++kc) mma::a_from_c<kBf16>(pa[kc], s[0][2 * kc], s[0][2 * kc + 1]);
}

// Issues O += PV against the swizzled V tile vt, as one committed wgmma group; the output
// and P are not to be touched until that group is waited for.
template <int kBc, int kD, bool kBf16>
__device__ __forceinline__ void issue_values(float (&acc)[1][kD / 8][4], uint32_t (&pa)[kBc / 16][4],
                                             uint32_t vt) {
  wgmma::fence_operands(acc[0]);
  wgmma::fence_operands(pa);
  wgmma::fence();
#pragma unroll
  for (int kc = 0; kc < kBc / 16; ++kc)
    wgmma::mma_rs<kD, kBf16>(acc[0], pa[kc], wgmma::mn_major<kBc>(vt, kc));
  wgmma::commit();
}

}  // namespace minictx::cuda::attn
