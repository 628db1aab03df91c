#pragma once
#include <cstdint>

#include "device/cuda/attention_common.cuh"
#include "device/cuda/flash_rows.cuh"
#include "device/cuda/wgmma_fragments.cuh"

// The backward's per-tile work on Hopper's warpgroup MMA (flash_bwd_sm90.cu).
// - dK/dV, one query tile for a warpgroup's 64 keys: Sᵀ = K Qᵀ and dPᵀ = V dOᵀ from shared
//   memory, Pᵀ and dSᵀ formed and rounded in registers, then dV += Pᵀ dO and dK += dSᵀ Q
//   with the same Q and dO tiles read transposed.
// - dQ, one key tile for a warpgroup's 64 queries: S = QKᵀ and dP = dO Vᵀ from shared
//   memory, dS formed and rounded in registers, then dQ += dS K with the K tile read
//   transposed.
namespace minictx::cuda::attn {

// A thread's two keys (group and group + 8 of its warp's 16): their positions and its dK
// and dV accumulators.
template <int kD>
struct WgmmaKeyRows {
  int64_t kpos[2];
  float dk[kD / 8][4], dv[kD / 8][4];
};

// The keys of warp `warp` (keys 16·warp.. of the key tile), before any query tile: keys
// past the tile have no position (never visible).
template <int kD>
__device__ __forceinline__ WgmmaKeyRows<kD> wgmma_key_rows(const AttnArgs& a, const KeyTile& tile, int warp,
                                                           int group) {
  WgmmaKeyRows<kD> r;
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int j = warp * 16 + group + rr * 8;
    r.kpos[rr] = j < tile.tk ? a.k_pos[tile.j0 + j] : kNoPosition;
  }
#pragma unroll
  for (int n = 0; n < kD / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      r.dk[n][e] = 0.0f;
      r.dv[n][e] = 0.0f;
    }
  return r;
}

// The two products both passes start with, from K-major swizzled tiles, waited for: S = X Yᵀ
// and dP = Z Wᵀ, X and Z the warpgroup's 64 rows of tiles of kXRows rows, Y and W tiles of
// kN rows (dK/dV: X = K, Z = V, Y = Q, W = dO; dQ: X = Q, Z = dO, Y = K, W = V).
template <int kXRows, int kN, int kD, bool kBf16>
__device__ __forceinline__ void scores_and_dp(float (&s)[kN / 8][4], float (&dp)[kN / 8][4], uint32_t x,
                                              uint32_t y, uint32_t z, uint32_t w) {
#pragma unroll
  for (int n = 0; n < kN / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) s[n][e] = dp[n][e] = 0.0f;
  wgmma::fence_operands(s);
  wgmma::fence_operands(dp);
  wgmma::fence();
#pragma unroll
  for (int kc = 0; kc < kD / 16; ++kc) {
    wgmma::mma_ss<kN, kBf16>(s, wgmma::k_major<kXRows>(x, kc), wgmma::k_major<kN>(y, kc));
    wgmma::mma_ss<kN, kBf16>(dp, wgmma::k_major<kXRows>(z, kc), wgmma::k_major<kN>(w, kc));
  }
  wgmma::commit();
  wgmma::wait<0>();
  wgmma::fence_operands(s);
  wgmma::fence_operands(dp);
}

// Issues dV += Pᵀ dO and dK += dSᵀ Q (Pᵀ, dSᵀ: A fragments in registers; the query tile's
// dO and Q tiles of kBr rows read transposed) as one committed group; dK, dV, Pᵀ and dSᵀ
// are not to be touched until it is waited for.
template <int kBr, int kD, bool kBf16>
__device__ __forceinline__ void issue_dk_dv(WgmmaKeyRows<kD>& r, uint32_t (&pa)[kBr / 16][4],
                                            uint32_t (&dsa)[kBr / 16][4], uint32_t qt, uint32_t dot) {
  wgmma::fence_operands(r.dk);
  wgmma::fence_operands(r.dv);
  wgmma::fence_operands(pa);
  wgmma::fence_operands(dsa);
  wgmma::fence();
#pragma unroll
  for (int kc = 0; kc < kBr / 16; ++kc) {
    wgmma::mma_rs<kD, kBf16>(r.dv, pa[kc], wgmma::mn_major<kBr>(dot, kc));
    wgmma::mma_rs<kD, kBf16>(r.dk, dsa[kc], wgmma::mn_major<kBr>(qt, kc));
  }
  wgmma::commit();
}

// One query tile of kBr rows (swizzled Q and dO tiles qt, dot; ls, dl, qp: its LSE, delta
// and positions; tq: its rows) for the warpgroup whose 64 keys start at k_rows and v_rows,
// in K and V tiles of kKRows rows. `masked`: whether any element may be masked.
template <int kKRows, int kBr, int kD, bool kBf16, bool kDocs = false>
__device__ __forceinline__ void wgmma_dkdv_tile(WgmmaKeyRows<kD>& r, uint32_t k_rows, uint32_t v_rows,
                                                uint32_t qt, uint32_t dot, const float* ls, const float* dl,
                                                const int64_t* qp, bool masked, int tq, int tig,
                                                float scale_log2, const AttnArgs& a,
                                                const RowSpans<2>* spans = nullptr) {
  float s[kBr / 8][4], dp[kBr / 8][4];
  scores_and_dp<kKRows, kBr, kD, kBf16>(s, dp, k_rows, qt, v_rows, dot);

  uint32_t pa[kBr / 16][4], dsa[kBr / 16][4];
  form_pt_dst<kBr, kBf16, kDocs>(s, dp, ls, dl, qp, r.kpos, masked, tq, tig, scale_log2, a, pa, dsa, spans);

  issue_dk_dv<kBr, kD, kBf16>(r, pa, dsa, qt, dot);
  wgmma::wait<0>();
  wgmma::fence_operands(r.dk);
  wgmma::fence_operands(r.dv);
  wgmma::fence_operands(pa);
  wgmma::fence_operands(dsa);
}

// One key tile of kBc keys (swizzled K and V tiles kt, vt; kp: their positions) for the
// warpgroup whose 64 queries start at q_rows and do_rows, in Q and dO tiles of kQRows
// rows; first_query: the position of the block's first query, for the causal test. With
// documents (kDocs), the key tiles start at key row key_first and every tile is masked by
// the rows' spans (as in wgmma_dkdv_tile).
template <int kQRows, int kBc, int kD, bool kBf16, bool kDocs = false>
__device__ __forceinline__ void wgmma_dq_tile(float (&dq_acc)[kD / 8][4], const DqRows& rows, uint32_t q_rows,
                                              uint32_t do_rows, uint32_t kt, uint32_t vt, const int64_t* kp,
                                              int t, int64_t first_query, int tig, float scale_log2,
                                              const AttnArgs& a, int64_t key_first = 0,
                                              const RowSpans<2>* spans = nullptr) {
  float s[kBc / 8][4], dp[kBc / 8][4];
  scores_and_dp<kQRows, kBc, kD, kBf16>(s, dp, q_rows, kt, do_rows, vt);

  const int valid = tile_rows(a.k_len - key_first - int64_t(t) * kBc, kBc);
  const int64_t last_key = kp[valid - 1];
  const bool masked = kDocs || valid < kBc || last_key >= a.real_len || (a.causal && last_key > first_query);
  uint32_t dsa[kBc / 16][4];
  form_ds<kBc, kBf16, kDocs>(s, dp, rows, kp, valid, masked, tig, scale_log2, a, dsa, spans);

  wgmma::fence_operands(dq_acc);
  wgmma::fence_operands(dsa);
  wgmma::fence();
#pragma unroll
  for (int kc = 0; kc < kBc / 16; ++kc)
    wgmma::mma_rs<kD, kBf16>(dq_acc, dsa[kc], wgmma::mn_major<kBc>(kt, kc));
  wgmma::commit();
  wgmma::wait<0>();
  wgmma::fence_operands(dq_acc);
  wgmma::fence_operands(dsa);
}

}  // namespace minictx::cuda::attn
