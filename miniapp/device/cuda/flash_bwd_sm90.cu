#include <cmath>

#include "core/cuda/cuda_check.hpp"
#include "device/cuda/attention_common.cuh"
#include "device/cuda/flash_attention.hpp"
#include "device/cuda/flash_bwd_sm90_tile.cuh"
#include "device/cuda/flash_rows.cuh"
#include "device/cuda/wgmma_fragments.cuh"

// The backward flash kernels on Hopper's warpgroup MMA (sm_90a): flash_bwd_sm80.cu's two
// passes with one warpgroup per thread block and every product a wgmma.
//   dK/dV: a block owns 64 keys of one KV head (wgmma's M) and walks the visible query
//   tiles of kBr of every query head of its group: Sᵀ = K Qᵀ and dPᵀ = V dOᵀ read K, V and
//   the Q, dO tiles from shared memory; Pᵀ and dSᵀ, rounded in registers, are the A
//   operands of dV += Pᵀ dO and dK += dSᵀ Q, whose B (dO, Q) is the same tile read
//   transposed.
//   dQ: a block owns 64 queries and walks the visible key tiles of 64: S = Q Kᵀ and
//   dP = dO Vᵀ from shared memory, dS in registers, dQ += dS K with K read transposed.
// Tiles are 128-byte swizzled (wgmma_fragments.cuh) and double-buffered by cp.async; the
// P/dS formation, masks and row updates are flash_bwd_sm80.cu's code (flash_rows.cuh).
namespace minictx::cuda {
namespace {

using namespace attn;

constexpr int kRowsPerBlock = kSm90BwdRows;  // wgmma's M: keys (dK/dV) or queries (dQ)
constexpr int kThreads = 128;                // one warpgroup

// Head dim → the query tile of the dK/dV pass (tile_sizes.hpp).
template <int kD>
constexpr int kWgmmaQueryTile = sm90_dkdv_query_tile(kD);
constexpr int kWgmmaDqKeyTile = kSm90DqKeyTile;

template <int kD, int kBr>
struct WgmmaKvShape {
  static constexpr int kKvBytes = kRowsPerBlock * kD * 2;  // the block's K (and V)
  static constexpr int kQBytes = kBr * kD * 2;             // one stage of Q (and dO)
  static constexpr size_t kSharedBytes = wgmma::kAlignmentSlack + size_t(2 * kKvBytes + 4 * kQBytes) +
                                         size_t(2 * kBr) * (2 * sizeof(float) + sizeof(int64_t));
};

template <int kD, int kBc>
struct WgmmaDqShape {
  static constexpr int kQBytes = kRowsPerBlock * kD * 2;  // the block's Q (and dO)
  static constexpr int kStageBytes = kBc * kD * 2;        // one stage of K (and V)
  static constexpr size_t kSharedBytes =
      wgmma::kAlignmentSlack + size_t(2 * kQBytes + 4 * kStageBytes) + size_t(2 * kBc) * 8;
};

template <int kD, int kBr, bool kBf16, bool kDocs>
__global__ void __launch_bounds__(kThreads)
    flash_bwd_wgmma_kernel(AttnArgs a, const typename mma::Operand<kBf16>::type* __restrict__ q,
                           const typename mma::Operand<kBf16>::type* __restrict__ k,
                           const typename mma::Operand<kBf16>::type* __restrict__ v,
                           const typename mma::Operand<kBf16>::type* __restrict__ dout,
                           const float* __restrict__ lse, const float* __restrict__ delta, float* dk,
                           float* dv) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Shape = WgmmaKvShape<kD, kBr>;
  constexpr int kBc = kRowsPerBlock, kQBytes = Shape::kQBytes;
  extern __shared__ unsigned char shared[];
  unsigned char* aligned = wgmma::aligned_tiles(shared);
  const uint32_t ks = mma::shared_address(aligned), vs = ks + Shape::kKvBytes, qs = vs + Shape::kKvBytes,
                 dos = qs + 2 * kQBytes;                                                // Q, dO: 2 stages
  auto* lse_s = reinterpret_cast<float*>(aligned + 2 * Shape::kKvBytes + 4 * kQBytes);  // 2 stages
  float* delta_s = lse_s + 2 * kBr;                                                     // 2 stages
  auto* qpos = reinterpret_cast<int64_t*>(delta_s + 2 * kBr);                           // 2 stages

  const int warp = int(threadIdx.x) / kWarp, lane = int(threadIdx.x) % kWarp;
  const int group = lane >> 2, tig = lane & 3;
  const KeyTile tile = key_tile<kBc, kBr, kDocs>(a);
  if (tile.steps == 0) return;  // padding keys only, or (causally) no query sees them

  const int64_t kv_stride = int64_t(a.kv_heads) * kD, q_stride = int64_t(a.heads) * kD;
  const int64_t kv_first = (int64_t(tile.b) * a.k_len + tile.j0) * a.kv_heads + tile.g;
  wgmma::load_tile_async<kBc, kD, kThreads>(ks, k + kv_first * kD, kv_stride, tile.tk);
  wgmma::load_tile_async<kBc, kD, kThreads>(vs, v + kv_first * kD, kv_stride, tile.tk);
  auto load_queries = [&](int step) {
    const int st = step & 1, h = tile.head_of(step);
    const int64_t i0 = tile.query_row_of(step, kBr);
    const int tq = tile_rows(a.q_len - i0, kBr);
    const int64_t first = (int64_t(tile.b) * a.q_len + i0) * a.heads + h;
    wgmma::load_tile_async<kBr, kD, kThreads>(qs + st * kQBytes, q + first * kD, q_stride, tq);
    wgmma::load_tile_async<kBr, kD, kThreads>(dos + st * kQBytes, dout + first * kD, q_stride, tq);
    const int64_t vec = (int64_t(tile.b) * a.heads + h) * a.vec_len + a.q_begin + i0;
    load_query_vectors<kBr, kThreads>(lse_s + st * kBr, delta_s + st * kBr, qpos + st * kBr, lse, delta,
                                      a.q_pos, vec, i0, tq);
  };
  load_queries(0);
  mma::cp_async_commit();

  WgmmaKeyRows<kD> rows = wgmma_key_rows<kD>(a, tile, warp, group);
  RowSpans<2> spans;
  if constexpr (kDocs) spans = key_row_spans(a, tile.b, tile.j0, tile.tk, warp, group);
  const bool ragged_keys = kDocs || tile.tk < kBc || tile.last_key >= a.real_len;
  const float scale_log2 = a.scale * kLog2e;
  for (int step = 0; step < tile.steps; ++step) {
    const int st = step & 1;
    wgmma::pipeline_step(step + 1 < tile.steps, [&] { load_queries(step + 1); });
    const int64_t* qp = qpos + st * kBr;
    const int tq = tile_rows(a.q_len - tile.query_row_of(step, kBr), kBr);
    const bool masked = ragged_keys || tq < kBr || (a.causal && tile.last_key > qp[0]);
    wgmma_dkdv_tile<kBc, kBr, kD, kBf16, kDocs>(rows, ks, vs, qs + st * kQBytes, dos + st * kQBytes,
                                                lse_s + st * kBr, delta_s + st * kBr, qp, masked, tq, tig,
                                                scale_log2, a, &spans);
  }

  add_dk_dv<kD>(rows.dk, rows.dv, a, tile, dk, dv, warp, group, tig);
#else
  __trap();  // built without sm_90a: flash_sm90_available() never chooses this kernel
#endif
}

template <int kD, int kBc, bool kBf16, bool kDocs>
__global__ void __launch_bounds__(kThreads)
    flash_bwd_dq_wgmma_kernel(AttnArgs a, const typename mma::Operand<kBf16>::type* __restrict__ q,
                              const typename mma::Operand<kBf16>::type* __restrict__ k,
                              const typename mma::Operand<kBf16>::type* __restrict__ v,
                              const typename mma::Operand<kBf16>::type* __restrict__ dout,
                              const float* __restrict__ lse, const float* __restrict__ delta, float* dq) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Shape = WgmmaDqShape<kD, kBc>;
  constexpr int kBr = kRowsPerBlock, kStage = Shape::kStageBytes;
  extern __shared__ unsigned char shared[];
  unsigned char* aligned = wgmma::aligned_tiles(shared);
  const uint32_t qs = mma::shared_address(aligned), dos = qs + Shape::kQBytes, ks = dos + Shape::kQBytes,
                 vs = ks + 2 * kStage;                                                 // K, V: 2 stages
  auto* kpos = reinterpret_cast<int64_t*>(aligned + 2 * Shape::kQBytes + 4 * kStage);  // 2 stages of kBc

  const int warp = int(threadIdx.x) / kWarp, lane = int(threadIdx.x) % kWarp;
  const int group = lane >> 2, tig = lane & 3;
  const QueryTile tile = query_tile<kBr>(a);
  if (tile.keys == 0) return;
  const KeyRange keys = walked_keys<kDocs>(a, tile);  // with documents, its queries' documents
  if (kDocs && keys.end == keys.first) return;
  const int key_tiles = int((keys.end - keys.first + kBc - 1) / kBc);

  const int64_t kv_stride = int64_t(a.kv_heads) * kD, q_stride = int64_t(a.heads) * kD;
  const auto* k_rows = k + (int64_t(tile.b) * a.k_len * a.kv_heads + tile.g) * kD + keys.first * kv_stride;
  const auto* v_rows = v + (int64_t(tile.b) * a.k_len * a.kv_heads + tile.g) * kD + keys.first * kv_stride;
  auto load_kv = [&](int t) {
    wgmma::load_kv_stage<kBc, kD, kThreads>(ks, vs, kpos, k_rows, v_rows, kv_stride, a.k_pos + keys.first,
                                            a.k_len - keys.first, t);
  };
  const int64_t first = (int64_t(tile.b) * a.q_len + tile.i0) * a.heads + tile.h;
  wgmma::load_tile_async<kBr, kD, kThreads>(qs, q + first * kD, q_stride, tile.tq);
  wgmma::load_tile_async<kBr, kD, kThreads>(dos, dout + first * kD, q_stride, tile.tq);
  load_kv(0);
  mma::cp_async_commit();

  const DqRows rows = dq_rows(a, tile, lse, delta, warp, group);
  RowSpans<2> spans;
  if constexpr (kDocs) spans = dq_row_spans(a, tile, warp, group);
  const float scale_log2 = a.scale * kLog2e;
  float dq_acc[kD / 8][4] = {};

  for (int t = 0; t < key_tiles; ++t) {
    wgmma::pipeline_step(t + 1 < key_tiles, [&] { load_kv(t + 1); });
    const uint32_t kt = ks + (t & 1) * kStage, vt = vs + (t & 1) * kStage;
    const int64_t* kp = kpos + (t & 1) * kBc;

    wgmma_dq_tile<kBr, kBc, kD, kBf16, kDocs>(dq_acc, rows, qs, dos, kt, vt, kp, t, tile.first_query, tig,
                                              scale_log2, a, keys.first, &spans);
  }

  add_dq<kD>(dq_acc, a, tile, dq, warp, group, tig);
#else
  __trap();  // built without sm_90a: flash_sm90_available() never chooses this kernel
#endif
}

template <int kD, bool kBf16, bool kDocs>
void launch_dkdv_wgmma(const AttnArgs& a, const void* q, const void* k, const void* v, const void* dout,
                       const float* lse, const float* delta, float* dk, float* dv, cudaStream_t stream) {
  using T = typename mma::Operand<kBf16>::type;
  constexpr int kBr = kWgmmaQueryTile<kD>;
  using Shape = WgmmaKvShape<kD, kBr>;
  constexpr auto kernel = flash_bwd_wgmma_kernel<kD, kBr, kBf16, kDocs>;
  allow_shared_memory<kernel>(Shape::kSharedBytes, "flash_bwd_wgmma shared memory");
  const dim3 grid(unsigned((a.k_len + kRowsPerBlock - 1) / kRowsPerBlock), unsigned(a.batch * a.kv_heads));
  kernel<<<grid, kThreads, Shape::kSharedBytes, stream>>>(a, static_cast<const T*>(q),
                                                          static_cast<const T*>(k), static_cast<const T*>(v),
                                                          static_cast<const T*>(dout), lse, delta, dk, dv);
}

template <int kD, bool kBf16, bool kDocs>
void launch_dq_wgmma(const AttnArgs& a, const void* q, const void* k, const void* v, const void* dout,
                     const float* lse, const float* delta, float* dq, cudaStream_t stream) {
  using T = typename mma::Operand<kBf16>::type;
  using Shape = WgmmaDqShape<kD, kWgmmaDqKeyTile>;
  constexpr auto kernel = flash_bwd_dq_wgmma_kernel<kD, kWgmmaDqKeyTile, kBf16, kDocs>;
  allow_shared_memory<kernel>(Shape::kSharedBytes, "flash_bwd_dq_wgmma shared memory");
  const dim3 grid(unsigned((a.q_len + kRowsPerBlock - 1) / kRowsPerBlock), unsigned(a.batch * a.heads));
  kernel<<<grid, kThreads, Shape::kSharedBytes, stream>>>(a, static_cast<const T*>(q),
                                                          static_cast<const T*>(k), static_cast<const T*>(v),
                                                          static_cast<const T*>(dout), lse, delta, dq);
}

// dK/dV, then dQ, on the same stream.
// Both passes, with (kDocs) or without the document mask in the kernels.
template <bool kDocs>
void launch_bwd_wgmma(const AttnArgs& a, const void* q, const void* k, const void* v, const void* dout,
                      const float* lse, const float* delta, float* dq, float* dk, float* dv,
                      cudaStream_t stream) {
  for_flash_shape(a, [&](auto d, auto bf16) {
    constexpr int kD = decltype(d)::value;
    constexpr bool kBf16 = decltype(bf16)::value;
    launch_dkdv_wgmma<kD, kBf16, kDocs>(a, q, k, v, dout, lse, delta, dk, dv, stream);
    launch_dq_wgmma<kD, kBf16, kDocs>(a, q, k, v, dout, lse, delta, dq, stream);
  });
}

}  // namespace

void flash_bwd_sm90(const AttnArgs& a, const void* q, const void* k, const void* v, const void* dout,
                    const float* lse, const float* delta, float* dq, float* dk, float* dv,
                    cudaStream_t stream) {
  launch_bwd_wgmma<false>(a, q, k, v, dout, lse, delta, dq, dk, dv, stream);
}

void flash_bwd_sm90_documents(const AttnArgs& a, const void* q, const void* k, const void* v,
                              const void* dout, const float* lse, const float* delta, float* dq, float* dk,
                              float* dv, cudaStream_t stream) {
  launch_bwd_wgmma<true>(a, q, k, v, dout, lse, delta, dq, dk, dv, stream);
}

}  // namespace minictx::cuda
