#include <algorithm>
#include <cmath>

#include "core/cuda/cuda_check.hpp"
#include "device/cuda/attention_common.cuh"
#include "device/cuda/flash_attention.hpp"
#include "device/cuda/flash_rows.cuh"
#include "device/cuda/mma_fragments.cuh"

// The backward flash kernels (FlashAttention-2, Algorithm 2, with dQ in a pass of its own).
// dK/dV: a thread block owns kWarps·16 keys of one KV head, each warp 16 of them, keeps
// their dK and dV in registers and walks the visible query tiles of every query head of
// the group, with Q, dO, LSE and delta double-buffered in shared memory. Per tile, in
// registers: Sᵀ = K Qᵀ, Pᵀ = exp(Sᵀ − LSE), dPᵀ = V dOᵀ, dSᵀ = Pᵀ ∘ (dPᵀ − delta); dV += Pᵀ dO
// and dK += dSᵀ Q take Pᵀ and dSᵀ as A fragments. dQ: a second kernel owns query tiles and
// recomputes P and dP to add dQ += dS K: 7 products instead of the 5 of dQ by fp32 atomics
// from dSᵀ staged in shared memory, yet faster on an H100 (forward+backward −1 to +2 % at
// D = 64, +2 to +7 % at D = 128; docs/performance.md, "One GPU against its GEMM limit"): without dQ the
// dK/dV kernel needs one barrier per query tile instead of two, no shared dSᵀ and fewer
// registers, and the dQ kernel adds its rows once, without atomics. With documents in the
// kernels (kDocs: flash_bwd_sm80_documents), a block walks only the query (dK/dV) or key (dQ)
// tiles of its rows' documents and masks each row by its document's span.
namespace minictx::cuda {
namespace {

using namespace attn;

template <int kD, int kWarpsPerBlock, int kQueryTile>
struct BwdShape {
  static constexpr int kWarps = kWarpsPerBlock, kBr = kQueryTile;
  static constexpr int kBc = kWarps * 16;
  static constexpr int kThreads = kWarps * kWarp;
  static constexpr int kQTile = kBr * kD;
  static constexpr size_t kSharedBytes =
      size_t(2 * kBc * kD + 4 * kQTile) * 2 + size_t(2 * kBr) * (2 * sizeof(float) + sizeof(int64_t));
};

template <int kD, int kWarps, int kBr, bool kBf16, bool kDocs>
__global__ void __launch_bounds__(kWarps* kWarp)
    flash_bwd_kernel(AttnArgs a, const typename mma::Operand<kBf16>::type* __restrict__ q,
                     const typename mma::Operand<kBf16>::type* __restrict__ k,
                     const typename mma::Operand<kBf16>::type* __restrict__ v,
                     const typename mma::Operand<kBf16>::type* __restrict__ dout,
                     const float* __restrict__ lse, const float* __restrict__ delta, float* dk, float* dv) {
  using T = typename mma::Operand<kBf16>::type;
  using Shape = BwdShape<kD, kWarps, kBr>;
  constexpr int kBc = Shape::kBc, kThreads = Shape::kThreads, kQTile = Shape::kQTile;
  extern __shared__ __align__(128) unsigned char shared[];
  T* ks = reinterpret_cast<T*>(shared);
  T* vs = ks + kBc * kD;
  T* qs = vs + kBc * kD;                                       // 2 stages
  T* dos = qs + 2 * kQTile;                                    // 2 stages
  auto* lse_s = reinterpret_cast<float*>(dos + 2 * kQTile);    // 2 stages
  float* delta_s = lse_s + 2 * kBr;                            // 2 stages
  auto* qpos = reinterpret_cast<int64_t*>(delta_s + 2 * kBr);  // 2 stages

  const int warp = int(threadIdx.x) / kWarp, lane = int(threadIdx.x) % kWarp;
  const int group = lane >> 2, tig = lane & 3;
  const KeyTile tile = key_tile<kBc, kBr, kDocs>(a);
  if (tile.steps == 0) return;  // padding keys only, or (causally) no query sees them
  const int b = tile.b, g = tile.g, tk = tile.tk, steps = tile.steps;
  const int64_t j0 = tile.j0, last_key = tile.last_key;

  const int64_t kv_stride = int64_t(a.kv_heads) * kD, q_stride = int64_t(a.heads) * kD;
  const int64_t kv_first = (int64_t(b) * a.k_len + j0) * a.kv_heads + g;
  mma::load_tile_async<kBc, kD, kThreads>(ks, k + kv_first * kD, kv_stride, tk);
  mma::load_tile_async<kBc, kD, kThreads>(vs, v + kv_first * kD, kv_stride, tk);
  auto load_queries = [&](int step) {
    const int st = step & 1, h = tile.head_of(step);
    const int64_t i0 = tile.query_row_of(step, kBr);
    const int tq = tile_rows(a.q_len - i0, kBr);
    const int64_t first = (int64_t(b) * a.q_len + i0) * a.heads + h;
    mma::load_tile_async<kBr, kD, kThreads>(qs + st * kQTile, q + first * kD, q_stride, tq);
    mma::load_tile_async<kBr, kD, kThreads>(dos + st * kQTile, dout + first * kD, q_stride, tq);
    const int64_t vec = (int64_t(b) * a.heads + h) * a.vec_len + a.q_begin + i0;
    load_query_vectors<kBr, kThreads>(lse_s + st * kBr, delta_s + st * kBr, qpos + st * kBr, lse, delta,
                                      a.q_pos, vec, i0, tq);
  };
  load_queries(0);
  mma::cp_async_commit();

  int64_t kpos[2];
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int j = warp * 16 + group + rr * 8;
    kpos[rr] = j < tk ? a.k_pos[j0 + j] : kNoPosition;
  }
  const bool ragged_keys = kDocs || tk < kBc || last_key >= a.real_len;
  const float scale_log2 = a.scale * kLog2e;
  float dk_acc[kD / 8][4] = {}, dv_acc[kD / 8][4] = {};

  for (int step = 0; step < steps; ++step) {
    const int st = step & 1;
    mma::pipeline_step(step + 1 < steps, [&] { load_queries(step + 1); });
    const T* qt = qs + st * kQTile;
    const T* dot = dos + st * kQTile;
    const float* ls = lse_s + st * kBr;
    const float* dl = delta_s + st * kBr;
    const int64_t* qp = qpos + st * kBr;

    // Sᵀ and dPᵀ: 16 keys × kBr queries per warp.
    float s[kBr / 8][4] = {}, dp[kBr / 8][4] = {};
#pragma unroll
    for (int kc = 0; kc < kD / 16; ++kc) {
      uint32_t kf[4], vf[4];
      mma::ldmatrix_x4(kf, mma::a_rows<kD>(ks, warp * 16, kc * 16, lane));
      mma::ldmatrix_x4(vf, mma::a_rows<kD>(vs, warp * 16, kc * 16, lane));
#pragma unroll
      for (int np = 0; np < kBr / 16; ++np) {
        uint32_t bf[4];
        mma::ldmatrix_x4(bf, mma::b_rows<kD>(qt, np * 16, kc * 16, lane));
        mma::mma_16816_x2<kBf16>(s[2 * np], s[2 * np + 1], kf, bf);
        mma::ldmatrix_x4(bf, mma::b_rows<kD>(dot, np * 16, kc * 16, lane));
        mma::mma_16816_x2<kBf16>(dp[2 * np], dp[2 * np + 1], vf, bf);
      }
    }
    // Pᵀ and dSᵀ, rounded to the operand type at once as the A fragments of the next
    // products (half the registers of their fp32 values). The mask matters only where keys
    // reach padding or the block's end, queries the block's end, or (causally) keys pass
    // the tile's first query.
    const int64_t i0 = tile.query_row_of(step, kBr);
    const int tq = tile_rows(a.q_len - i0, kBr);
    const bool masked = ragged_keys || tq < kBr || (a.causal && last_key > qp[0]);
    uint32_t pa[kBr / 16][4], dsa[kBr / 16][4];
    if constexpr (kDocs) {
      // The keys' spans, read per query tile: held across the loop they spill (D = 128).
      const RowSpans<2> spans = key_row_spans(a, b, j0, tk, warp, group);
      form_pt_dst<kBr, kBf16, true>(s, dp, ls, dl, qp, kpos, masked, tq, tig, scale_log2, a, pa, dsa, &spans);
    } else {
      form_pt_dst<kBr, kBf16>(s, dp, ls, dl, qp, kpos, masked, tq, tig, scale_log2, a, pa, dsa);
    }
    // dV += Pᵀ dO and dK += dSᵀ Q, k running over the tile's queries.
#pragma unroll
    for (int kc = 0; kc < kBr / 16; ++kc) {
#pragma unroll
      for (int np = 0; np < kD / 16; ++np) {
        uint32_t bf[4];
        mma::ldmatrix_x4_trans(bf, mma::b_cols<kD>(dot, kc * 16, np * 16, lane));
        mma::mma_16816_x2<kBf16>(dv_acc[2 * np], dv_acc[2 * np + 1], pa[kc], bf);
        mma::ldmatrix_x4_trans(bf, mma::b_cols<kD>(qt, kc * 16, np * 16, lane));
        mma::mma_16816_x2<kBf16>(dk_acc[2 * np], dk_acc[2 * np + 1], dsa[kc], bf);
      }
    }
  }

  add_dk_dv<kD>(dk_acc, dv_acc, a, tile, dk, dv, warp, group, tig);
}

// The separate dQ pass, FlashAttention-2's alternative to the atomics: a block owns
// kWarps·16 queries of one head, each warp 16 of them with their Q and dO fragments held in
// registers, and walks the visible key tiles (K, V and key positions double-buffered by
// cp.async). Per tile it recomputes S = QKᵀ, P and dP = dO Vᵀ, forms dS and adds
// dQ += dS K in registers; the block then adds its rows to dq once, with no atomics.
template <int kD, int kWarpsPerBlock, int kKeyTile>
struct DqShape {
  static constexpr int kWarps = kWarpsPerBlock, kBc = kKeyTile;
  static constexpr int kBr = kWarps * 16;
  static constexpr int kThreads = kWarps * kWarp;
  static constexpr int kTile = kBc * kD;
  static constexpr size_t kSharedBytes =
      size_t(2 * kBr * kD + 4 * kTile) * 2 + size_t(2 * kBc) * sizeof(int64_t);
};

template <int kD, int kWarps, int kBc, bool kBf16, bool kDocs>
__global__ void __launch_bounds__(kWarps* kWarp)
    flash_bwd_dq_kernel(AttnArgs a, const typename mma::Operand<kBf16>::type* __restrict__ q,
                        const typename mma::Operand<kBf16>::type* __restrict__ k,
                        const typename mma::Operand<kBf16>::type* __restrict__ v,
                        const typename mma::Operand<kBf16>::type* __restrict__ dout,
                        const float* __restrict__ lse, const float* __restrict__ delta, float* dq) {
  using T = typename mma::Operand<kBf16>::type;
  using Shape = DqShape<kD, kWarps, kBc>;
  constexpr int kBr = Shape::kBr, kThreads = Shape::kThreads, kTile = Shape::kTile;
  extern __shared__ __align__(128) unsigned char shared[];
  T* qs = reinterpret_cast<T*>(shared);
  T* dos = qs + kBr * kD;
  T* ks = dos + kBr * kD;                                   // 2 stages
  T* vs = ks + 2 * kTile;                                   // 2 stages
  auto* kpos = reinterpret_cast<int64_t*>(vs + 2 * kTile);  // 2 stages of kBc

  const int warp = int(threadIdx.x) / kWarp, lane = int(threadIdx.x) % kWarp;
  const int group = lane >> 2, tig = lane & 3;
  const QueryTile tile = query_tile<kBr>(a);
  if (tile.keys == 0) return;
  const KeyRange keys = walked_keys<kDocs>(a, tile);  // with documents, its queries' documents
  if (kDocs && keys.end == keys.first) return;
  const int b = tile.b, h = tile.h, g = tile.g, tq = tile.tq,
            tiles = int((keys.end - keys.first + kBc - 1) / kBc);
  const int64_t i0 = tile.i0, first_query = tile.first_query;

  const int64_t kv_stride = int64_t(a.kv_heads) * kD, q_stride = int64_t(a.heads) * kD;
  const T* k_rows = k + (int64_t(b) * a.k_len * a.kv_heads + g) * kD + keys.first * kv_stride;
  const T* v_rows = v + (int64_t(b) * a.k_len * a.kv_heads + g) * kD + keys.first * kv_stride;
  auto load_kv = [&](int t) {
    mma::load_kv_stage<kBc, kD, kThreads>(ks, vs, kpos, k_rows, v_rows, kv_stride, a.k_pos + keys.first,
                                          a.k_len - keys.first, t);
  };
  const int64_t first = (int64_t(b) * a.q_len + i0) * a.heads + h;
  mma::load_tile_async<kBr, kD, kThreads>(qs, q + first * kD, q_stride, tq);
  mma::load_tile_async<kBr, kD, kThreads>(dos, dout + first * kD, q_stride, tq);
  load_kv(0);
  mma::cp_async_commit();

  const DqRows rows = dq_rows(a, tile, lse, delta, warp, group);
  RowSpans<2> spans;
  if constexpr (kDocs) spans = dq_row_spans(a, tile, warp, group);
  const float scale_log2 = a.scale * kLog2e;
  uint32_t qf[kD / 16][4], dof[kD / 16][4];
  float dq_acc[kD / 8][4] = {};

  for (int t = 0; t < tiles; ++t) {
    mma::pipeline_step(t + 1 < tiles, [&] { load_kv(t + 1); });
    if (t == 0) {
#pragma unroll
      for (int kc = 0; kc < kD / 16; ++kc) {
        mma::ldmatrix_x4(qf[kc], mma::a_rows<kD>(qs, warp * 16, kc * 16, lane));
        mma::ldmatrix_x4(dof[kc], mma::a_rows<kD>(dos, warp * 16, kc * 16, lane));
      }
    }
    const T* kt = ks + (t & 1) * kTile;
    const T* vt = vs + (t & 1) * kTile;
    const int64_t* kp = kpos + (t & 1) * kBc;

    float s[kBc / 8][4] = {}, dp[kBc / 8][4] = {};
#pragma unroll
    for (int kc = 0; kc < kD / 16; ++kc) {
#pragma unroll
      for (int np = 0; np < kBc / 16; ++np) {
        uint32_t bf[4];
        mma::ldmatrix_x4(bf, mma::b_rows<kD>(kt, np * 16, kc * 16, lane));
        mma::mma_16816_x2<kBf16>(s[2 * np], s[2 * np + 1], qf[kc], bf);
        mma::ldmatrix_x4(bf, mma::b_rows<kD>(vt, np * 16, kc * 16, lane));
        mma::mma_16816_x2<kBf16>(dp[2 * np], dp[2 * np + 1], dof[kc], bf);
      }
    }
    const int valid = tile_rows(a.k_len - keys.first - int64_t(t) * kBc, kBc);
    const int64_t last_key = kp[valid - 1];
    const bool masked =
        kDocs || valid < kBc || last_key >= a.real_len || (a.causal && last_key > first_query);
    uint32_t dsa[kBc / 16][4];
    form_ds<kBc, kBf16, kDocs>(s, dp, rows, kp, valid, masked, tig, scale_log2, a, dsa, &spans);
#pragma unroll
    for (int kc = 0; kc < kBc / 16; ++kc) {
#pragma unroll
      for (int np = 0; np < kD / 16; ++np) {
        uint32_t bf[4];
        mma::ldmatrix_x4_trans(bf, mma::b_cols<kD>(kt, kc * 16, np * 16, lane));
        mma::mma_16816_x2<kBf16>(dq_acc[2 * np], dq_acc[2 * np + 1], dsa[kc], bf);
      }
    }
  }

  add_dq<kD>(dq_acc, a, tile, dq, warp, group, tig);
}

// Both passes at head dim kD on their tiles (tile_sizes.hpp): a warp owns 16 keys (dK/dV)
// or 16 queries (dQ).
template <int kD>
using Sm80Dkdv = BwdShape<kD, sm80_tiles(kD).bwd_k / 16, sm80_tiles(kD).bwd_q>;
template <int kD>
using Sm80Dq = DqShape<kD, sm80_tiles(kD).dq_q / 16, sm80_tiles(kD).dq_k>;

// dK/dV, then dQ, on the same stream.
template <int kD, bool kBf16, bool kDocs>
void launch_bwd(const AttnArgs& a, const void* q, const void* k, const void* v, const void* dout,
                const float* lse, const float* delta, float* dq, float* dk, float* dv, cudaStream_t stream) {
  using T = typename mma::Operand<kBf16>::type;
  using KvShape = Sm80Dkdv<kD>;
  using QShape = Sm80Dq<kD>;
  constexpr auto kv_kernel = flash_bwd_kernel<kD, KvShape::kWarps, KvShape::kBr, kBf16, kDocs>;
  constexpr auto q_kernel = flash_bwd_dq_kernel<kD, QShape::kWarps, QShape::kBc, kBf16, kDocs>;
  allow_shared_memory<kv_kernel>(KvShape::kSharedBytes, "flash_bwd shared memory");
  allow_shared_memory<q_kernel>(QShape::kSharedBytes, "flash_bwd_dq shared memory");
  const auto* qt = static_cast<const T*>(q);
  const auto* kt = static_cast<const T*>(k);
  const auto* vt = static_cast<const T*>(v);
  const auto* dt = static_cast<const T*>(dout);
  const dim3 kv_grid(unsigned((a.k_len + KvShape::kBc - 1) / KvShape::kBc), unsigned(a.batch * a.kv_heads));
  kv_kernel<<<kv_grid, KvShape::kThreads, KvShape::kSharedBytes, stream>>>(a, qt, kt, vt, dt, lse, delta, dk,
                                                                           dv);
  const dim3 q_grid(unsigned((a.q_len + QShape::kBr - 1) / QShape::kBr), unsigned(a.batch * a.heads));
  q_kernel<<<q_grid, QShape::kThreads, QShape::kSharedBytes, stream>>>(a, qt, kt, vt, dt, lse, delta, dq);
}

}  // namespace

size_t flash_bwd_sm80_shared_bytes(int head_dim) {
  return for_head_dim(head_dim, [](auto d) {
    constexpr int kD = decltype(d)::value;
    return std::max(Sm80Dkdv<kD>::kSharedBytes, Sm80Dq<kD>::kSharedBytes);
  });
}

void flash_bwd_sm80(const AttnArgs& a, const void* q, const void* k, const void* v, const void* dout,
                    const float* lse, const float* delta, float* dq, float* dk, float* dv,
                    cudaStream_t stream) {
  for_flash_shape(a, [&](auto d, auto bf16) {
    launch_bwd<decltype(d)::value, decltype(bf16)::value, false>(a, q, k, v, dout, lse, delta, dq, dk, dv,
                                                                 stream);
  });
}

void flash_bwd_sm80_documents(const AttnArgs& a, const void* q, const void* k, const void* v,
                              const void* dout, const float* lse, const float* delta, float* dq, float* dk,
                              float* dv, cudaStream_t stream) {
  for_flash_shape(a, [&](auto d, auto bf16) {
    launch_bwd<decltype(d)::value, decltype(bf16)::value, true>(a, q, k, v, dout, lse, delta, dq, dk, dv,
                                                                stream);
  });
}

}  // namespace minictx::cuda
