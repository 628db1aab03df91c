#include <cmath>

#include "device/cuda/attention_common.cuh"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/flash_attention.hpp"
#include "device/cuda/mma_fragments.cuh"

// The backward flash kernel (FlashAttention-2, Algorithm 2): a thread block owns kWarps·16
// keys of one KV head, each warp 16 of them, keeps their dK and dV in registers and walks
// the visible query tiles of every query head of the group, with Q, dO, LSE and delta
// double-buffered in shared memory. Per tile, in registers: Sᵀ = K Qᵀ, Pᵀ = exp(Sᵀ − LSE),
// dPᵀ = V dOᵀ, dSᵀ = Pᵀ ∘ (dPᵀ − delta); dV += Pᵀ dO and dK += dSᵀ Q take Pᵀ and dSᵀ
// as A fragments. dQ += dS K needs every key of the block, so dSᵀ goes through shared
// memory and each warp adds its share of dQ with fp32 atomics (red.global.add): one pass
// over the keys instead of a second kernel that recomputes P and dP.
namespace minictx::cuda {
namespace {

using namespace attn;

template <int kD, int kWarps, int kBr>
struct BwdShape {
  static constexpr int kBc = kWarps * 16;
  static constexpr int kThreads = kWarps * kWarp;
  static constexpr int kQTile = kBr * kD;
  // dQ: warps split the query tile's 16-row m-tiles and, beyond that, its columns.
  static constexpr int kMTiles = kBr / 16;
  static constexpr int kDqCols = kD / (kWarps / kMTiles);
  static constexpr size_t kSharedBytes = size_t(2 * kBc * kD + 4 * kQTile + kBc * kBr) * 2 +
                                         size_t(2 * kBr) * (2 * sizeof(float) + sizeof(int64_t));
  static_assert(kWarps % kMTiles == 0 && kDqCols % 16 == 0, "dQ work splits evenly over the warps");
};

template <int kD, int kWarps, int kBr, bool kBf16>
__global__ void __launch_bounds__(kWarps* kWarp)
    flash_bwd_kernel(AttnArgs a, const typename mma::Operand<kBf16>::type* __restrict__ q,
                     const typename mma::Operand<kBf16>::type* __restrict__ k,
                     const typename mma::Operand<kBf16>::type* __restrict__ v,
                     const typename mma::Operand<kBf16>::type* __restrict__ dout,
                     const float* __restrict__ lse, const float* __restrict__ delta, float* dq, float* dk,
                     float* dv) {
  using T = typename mma::Operand<kBf16>::type;
  using Shape = BwdShape<kD, kWarps, kBr>;
  constexpr int kBc = Shape::kBc, kThreads = Shape::kThreads, kQTile = Shape::kQTile;
  extern __shared__ __align__(128) unsigned char shared[];
  T* ks = reinterpret_cast<T*>(shared);
  T* vs = ks + kBc * kD;
  T* qs = vs + kBc * kD;                                       // 2 stages
  T* dos = qs + 2 * kQTile;                                    // 2 stages
  T* dss = dos + 2 * kQTile;                                   // dSᵀ, kBc × kBr
  auto* lse_s = reinterpret_cast<float*>(dss + kBc * kBr);     // 2 stages
  float* delta_s = lse_s + 2 * kBr;                            // 2 stages
  auto* qpos = reinterpret_cast<int64_t*>(delta_s + 2 * kBr);  // 2 stages

  const int warp = int(threadIdx.x) / kWarp, lane = int(threadIdx.x) % kWarp;
  const int group = lane >> 2, tig = lane & 3;
  const int b = int(blockIdx.y) / a.kv_heads, g = int(blockIdx.y) % a.kv_heads;
  const int heads_per_kv = a.heads / a.kv_heads;
  const int64_t j0 = int64_t(blockIdx.x) * kBc;
  const int tk = tile_rows(a.k_len - j0, kBc);
  const int64_t first_key = a.k_pos[j0], last_key = a.k_pos[j0 + tk - 1];
  if (first_key >= a.real_len) return;  // padding keys only: no gradient
  // Causally, queries before the block's first key see none of it.
  const int64_t first_tile = a.causal ? lower_bound(a.q_pos, a.q_len, first_key) / kBr : 0;
  const int64_t tiles_per_head = (a.q_len + kBr - 1) / kBr - first_tile;
  if (tiles_per_head <= 0) return;
  const int steps = int(tiles_per_head) * heads_per_kv;

  const int64_t kv_stride = int64_t(a.kv_heads) * kD, q_stride = int64_t(a.heads) * kD;
  const int64_t kv_first = (int64_t(b) * a.k_len + j0) * a.kv_heads + g;
  mma::load_tile_async<kBc, kD, kThreads>(ks, k + kv_first * kD, kv_stride, tk);
  mma::load_tile_async<kBc, kD, kThreads>(vs, v + kv_first * kD, kv_stride, tk);
  auto head_of = [&](int step) { return g * heads_per_kv + int(step / tiles_per_head); };
  auto tile_of = [&](int step) { return (first_tile + step % tiles_per_head) * kBr; };
  auto load_queries = [&](int step) {
    const int st = step & 1, h = head_of(step);
    const int64_t i0 = tile_of(step);
    const int tq = tile_rows(a.q_len - i0, kBr);
    const int64_t first = (int64_t(b) * a.q_len + i0) * a.heads + h;
    mma::load_tile_async<kBr, kD, kThreads>(qs + st * kQTile, q + first * kD, q_stride, tq);
    mma::load_tile_async<kBr, kD, kThreads>(dos + st * kQTile, dout + first * kD, q_stride, tq);
    const int64_t vec = (int64_t(b) * a.heads + h) * a.vec_len + a.q_begin + i0;
    for (int i = int(threadIdx.x); i < kBr; i += kThreads) {
      const bool ok = i < tq;
      const int64_t at = ok ? i : 0;
      mma::cp_async_small<4>(mma::shared_address(lse_s + st * kBr + i), lse + vec + at, ok);
      mma::cp_async_small<4>(mma::shared_address(delta_s + st * kBr + i), delta + vec + at, ok);
      mma::cp_async_small<8>(mma::shared_address(qpos + st * kBr + i), a.q_pos + i0 + at, ok);
    }
  };
  load_queries(0);
  mma::cp_async_commit();

  int64_t kpos[2];
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int j = warp * 16 + group + rr * 8;
    kpos[rr] = j < tk ? a.k_pos[j0 + j] : kNoPosition;
  }
  const bool ragged_keys = tk < kBc || last_key >= a.real_len;
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
    // Pᵀ (in s) and dSᵀ (in dp). The mask matters only where keys reach padding or the
    // block's end, queries the block's end, or (causally) keys pass the tile's first query.
    const int64_t i0 = tile_of(step);
    const int tq = tile_rows(a.q_len - i0, kBr);
    const bool masked = ragged_keys || tq < kBr || (a.causal && last_key > qp[0]);
#pragma unroll
    for (int n = 0; n < kBr / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = n * 8 + 2 * tig + (e & 1);
        // A row that sees no key at all has LSE −∞ and P = 0.
        const float l = ls[i] == -INFINITY ? INFINITY : ls[i] * kLog2e;
        float p = exp2f(fmaf(s[n][e], scale_log2, -l));
        if (masked && (i >= tq || !visible(a, kpos[e >> 1], qp[i]))) p = 0.0f;
        s[n][e] = p;
        dp[n][e] = p * (dp[n][e] - dl[i]);
      }
    }
    // dV += Pᵀ dO and dK += dSᵀ Q, k running over the tile's queries.
#pragma unroll
    for (int kc = 0; kc < kBr / 16; ++kc) {
      uint32_t pa[4], dsa[4];
      mma::a_from_c<kBf16>(pa, s[2 * kc], s[2 * kc + 1]);
      mma::a_from_c<kBf16>(dsa, dp[2 * kc], dp[2 * kc + 1]);
#pragma unroll
      for (int np = 0; np < kD / 16; ++np) {
        uint32_t bf[4];
        mma::ldmatrix_x4_trans(bf, mma::b_cols<kD>(dot, kc * 16, np * 16, lane));
        mma::mma_16816_x2<kBf16>(dv_acc[2 * np], dv_acc[2 * np + 1], pa, bf);
        mma::ldmatrix_x4_trans(bf, mma::b_cols<kD>(qt, kc * 16, np * 16, lane));
        mma::mma_16816_x2<kBf16>(dk_acc[2 * np], dk_acc[2 * np + 1], dsa, bf);
      }
    }
    // dSᵀ to shared memory, rounded as the operands are.
#pragma unroll
    for (int n = 0; n < kBr / 8; ++n)
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {
        const int key = warp * 16 + group + rr * 8;
        *reinterpret_cast<uint32_t*>(dss + mma::swizzled<kBr>(key, n * 8 + 2 * tig)) =
            mma::pack<kBf16>(dp[n][2 * rr], dp[n][2 * rr + 1]);
      }
    __syncthreads();

    // dQ (kBr × kD) += scale · dS K: this warp's m-tile and column range.
    const int mt = warp % Shape::kMTiles, col0 = (warp / Shape::kMTiles) * Shape::kDqCols;
    float dq_acc[Shape::kDqCols / 8][4] = {};
#pragma unroll
    for (int kc = 0; kc < kBc / 16; ++kc) {
      uint32_t af[4];
      mma::ldmatrix_x4_trans(af, mma::a_cols<kBr>(dss, mt * 16, kc * 16, lane));
#pragma unroll
      for (int np = 0; np < Shape::kDqCols / 16; ++np) {
        uint32_t bf[4];
        mma::ldmatrix_x4_trans(bf, mma::b_cols<kD>(ks, kc * 16, col0 + np * 16, lane));
        mma::mma_16816_x2<kBf16>(dq_acc[2 * np], dq_acc[2 * np + 1], af, bf);
      }
    }
    const int h = head_of(step);
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
      const int i = mt * 16 + group + rr * 8;
      if (i >= tq) continue;
      float* row = dq + ((int64_t(b) * a.o_rows + a.q_begin + i0 + i) * a.heads + h) * kD + col0;
#pragma unroll
      for (int n = 0; n < Shape::kDqCols / 8; ++n) {
        atomicAdd(row + n * 8 + 2 * tig, a.scale * dq_acc[n][2 * rr]);
        atomicAdd(row + n * 8 + 2 * tig + 1, a.scale * dq_acc[n][2 * rr + 1]);
      }
    }
    __syncthreads();  // this stage and dSᵀ are consumed before they are refilled
  }

#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int j = warp * 16 + group + rr * 8;
    if (j >= tk) continue;
    const int64_t off = ((int64_t(b) * a.dk_rows + a.k_begin + j0 + j) * a.kv_heads + g) * kD;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      auto* dkc = reinterpret_cast<float2*>(dk + off + n * 8 + 2 * tig);
      auto* dvc = reinterpret_cast<float2*>(dv + off + n * 8 + 2 * tig);
      const float2 dk0 = *dkc, dv0 = *dvc;
      *dkc = float2{dk0.x + a.scale * dk_acc[n][2 * rr], dk0.y + a.scale * dk_acc[n][2 * rr + 1]};
      *dvc = float2{dv0.x + dv_acc[n][2 * rr], dv0.y + dv_acc[n][2 * rr + 1]};
    }
  }
}

template <int kD, int kWarps, int kBr, bool kBf16>
void launch_bwd(const AttnArgs& a, const void* q, const void* k, const void* v, const void* dout,
                const float* lse, const float* delta, float* dq, float* dk, float* dv, cudaStream_t stream) {
  using T = typename mma::Operand<kBf16>::type;
  using Shape = BwdShape<kD, kWarps, kBr>;
  auto* kernel = flash_bwd_kernel<kD, kWarps, kBr, kBf16>;
  static const cudaError_t raised =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(Shape::kSharedBytes));
  check(raised, "flash_bwd shared memory");
  const dim3 grid(unsigned((a.k_len + Shape::kBc - 1) / Shape::kBc), unsigned(a.batch * a.kv_heads));
  kernel<<<grid, Shape::kThreads, Shape::kSharedBytes, stream>>>(
      a, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
      static_cast<const T*>(dout), lse, delta, dq, dk, dv);
}

template <bool kBf16>
void bwd_for_head_dim(const AttnArgs& a, const void* q, const void* k, const void* v, const void* dout,
                      const float* lse, const float* delta, float* dq, float* dk, float* dv,
                      cudaStream_t stream) {
  if (a.head_dim == 64)
    launch_bwd<64, kFlashTilesD64.bwd_k / 16, kFlashTilesD64.bwd_q, kBf16>(a, q, k, v, dout, lse, delta, dq,
                                                                           dk, dv, stream);
  else
    launch_bwd<128, kFlashTilesD128.bwd_k / 16, kFlashTilesD128.bwd_q, kBf16>(a, q, k, v, dout, lse, delta,
                                                                              dq, dk, dv, stream);
}

}  // namespace

size_t flash_bwd_shared_bytes(int head_dim) {
  return head_dim == 64 ? BwdShape<64, kFlashTilesD64.bwd_k / 16, kFlashTilesD64.bwd_q>::kSharedBytes
                        : BwdShape<128, kFlashTilesD128.bwd_k / 16, kFlashTilesD128.bwd_q>::kSharedBytes;
}

void flash_bwd(const AttnArgs& a, const void* q, const void* k, const void* v, const void* dout,
               const float* lse, const float* delta, float* dq, float* dk, float* dv, cudaStream_t stream) {
  if (a.precision == Precision::bf16)
    bwd_for_head_dim<true>(a, q, k, v, dout, lse, delta, dq, dk, dv, stream);
  else
    bwd_for_head_dim<false>(a, q, k, v, dout, lse, delta, dq, dk, dv, stream);
}

}  // namespace minictx::cuda
