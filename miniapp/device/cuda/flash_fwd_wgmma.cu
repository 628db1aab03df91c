#include "device/cuda/attention_common.cuh"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/flash_attention.hpp"
#include "device/cuda/flash_fwd_wgmma_tile.cuh"
#include "device/cuda/flash_rows.cuh"
#include "device/cuda/mma_fragments.cuh"
#include "device/cuda/wgmma_fragments.cuh"

// The forward flash kernel on Hopper's warpgroup MMA (sm_90a): the partitioning of
// flash_fwd.cu with one warpgroup (4 warps) per thread block owning 64 queries of one
// head. S = QKᵀ is one wgmma m64n{kBc} per 16 columns of the head dim, reading Q and the
// K tile from shared memory; P, rounded to 16 bits in registers, is the A operand of
// O += PV, one wgmma m64n{kD} per 16 keys with V from shared memory. K/V tiles are
// double-buffered with cp.async as in the mma.sync kernel; masking, the online softmax
// and the merge into the running (O, LSE) are the same code (flash_rows.cuh), and the
// step on one key tile is the TMA-fed kernel's (flash_fwd_wgmma_tile.cuh). Not yet
// FlashAttention-3: no TMA, no producer warps, no overlap of the softmax with the next
// product inside a block (two blocks per SM overlap each other's).
namespace minictx::cuda {
namespace {

using namespace attn;

constexpr int kRowsPerBlock = 64;  // wgmma's M
constexpr int kThreads = 128;      // one warpgroup

template <int kD, int kBc>
struct WgmmaFwdShape {
  static constexpr int kQBytes = kRowsPerBlock * kD * 2;
  static constexpr int kStageBytes = kBc * kD * 2;  // one K or V tile
  static constexpr size_t kSharedBytes =
      wgmma::kAlignmentSlack + size_t(kQBytes + 4 * kStageBytes) + size_t(2 * kBc) * 8;
};

// Head dim → key tile: S (kBc / 2 registers a thread) and O (kD / 2) fit beside each
// other, and the shared memory lets two blocks share an SM.
template <int kD>
constexpr int kWgmmaKeyTile = kD == 64 ? 128 : 64;

template <int kD, int kBc, bool kBf16>
__global__ void __launch_bounds__(kThreads)
    flash_fwd_wgmma_kernel(AttnArgs a, const typename mma::Operand<kBf16>::type* __restrict__ q,
                           const typename mma::Operand<kBf16>::type* __restrict__ k,
                           const typename mma::Operand<kBf16>::type* __restrict__ v, float* o, float* lse) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Shape = WgmmaFwdShape<kD, kBc>;
  constexpr int kStage = Shape::kStageBytes;
  extern __shared__ unsigned char shared[];
  unsigned char* aligned = wgmma::aligned_tiles(shared);
  const uint32_t qs = mma::shared_address(aligned), ks = qs + Shape::kQBytes, vs = ks + 2 * kStage;
  auto* kpos = reinterpret_cast<int64_t*>(aligned + Shape::kQBytes + 4 * kStage);  // 2 stages of kBc

  const int warp = int(threadIdx.x) / kWarp, lane = int(threadIdx.x) % kWarp;
  const int group = lane >> 2, tig = lane & 3;
  const QueryTile tile = query_tile<kRowsPerBlock>(a);
  if (tile.keys == 0) return;  // nothing visible: the running (o, lse) stays
  const int b = tile.b, h = tile.h, g = tile.g, tq = tile.tq, key_tiles = int((tile.keys + kBc - 1) / kBc);
  const int64_t i0 = tile.i0, first_query = tile.first_query;

  const int64_t kv_stride = int64_t(a.kv_heads) * kD;
  const auto* k_rows = k + (int64_t(b) * a.k_len * a.kv_heads + g) * kD;
  const auto* v_rows = v + (int64_t(b) * a.k_len * a.kv_heads + g) * kD;
  auto load_kv = [&](int t) {
    wgmma::load_kv_stage<kBc, kD, kThreads>(ks, vs, kpos, k_rows, v_rows, kv_stride, a.k_pos, a.k_len, t);
  };

  wgmma::load_tile_async<kRowsPerBlock, kD, kThreads>(
      qs, q + ((int64_t(b) * a.q_len + i0) * a.heads + h) * kD, int64_t(a.heads) * kD, tq);
  load_kv(0);
  mma::cp_async_commit();

  WgmmaForwardRows<kD> rows = wgmma_forward_rows<kD>(a, i0, tq, warp, group);
  const float scale_log2 = a.scale * kLog2e;
  for (int t = 0; t < key_tiles; ++t) {
    wgmma::pipeline_step(t + 1 < key_tiles, [&] { load_kv(t + 1); });
    const uint32_t kt = ks + (t & 1) * kStage, vt = vs + (t & 1) * kStage;
    wgmma_forward_tile<kRowsPerBlock, kBc, kD, kBf16>(rows, qs, kt, vt, kpos + (t & 1) * kBc, t, first_query,
                                                      a, scale_log2, tig);
  }

  merge_rows<1, kD>(rows.acc, rows.row_max, rows.row_sum, a, o, lse, b, h, i0, tq, warp, group, tig);
#else
  __trap();  // built without sm_90a: flash_wgmma_available() never chooses this kernel
#endif
}

template <int kD, bool kBf16>
void launch_fwd_wgmma(const AttnArgs& a, const void* q, const void* k, const void* v, float* o, float* lse,
                      cudaStream_t stream) {
  using T = typename mma::Operand<kBf16>::type;
  constexpr int kBc = kWgmmaKeyTile<kD>;
  using Shape = WgmmaFwdShape<kD, kBc>;
  constexpr auto kernel = flash_fwd_wgmma_kernel<kD, kBc, kBf16>;
  allow_shared_memory<kernel>(Shape::kSharedBytes, "flash_fwd_wgmma shared memory");
  const dim3 grid(unsigned((a.q_len + kRowsPerBlock - 1) / kRowsPerBlock), unsigned(a.batch * a.heads));
  kernel<<<grid, kThreads, Shape::kSharedBytes, stream>>>(
      a, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), o, lse);
}

template <bool kBf16>
void wgmma_for_head_dim(const AttnArgs& a, const void* q, const void* k, const void* v, float* o, float* lse,
                        cudaStream_t stream) {
  if (a.head_dim == 64)
    launch_fwd_wgmma<64, kBf16>(a, q, k, v, o, lse, stream);
  else
    launch_fwd_wgmma<128, kBf16>(a, q, k, v, o, lse, stream);
}

}  // namespace

FlashTiles flash_fwd_wgmma_tiles(int head_dim) {
  FlashTiles t = flash_tiles(head_dim);
  t.fwd_q = kRowsPerBlock;
  t.fwd_k = head_dim == 64 ? kWgmmaKeyTile<64> : kWgmmaKeyTile<128>;
  return t;
}

void flash_fwd_wgmma(const AttnArgs& a, const void* q, const void* k, const void* v, float* o, float* lse,
                     cudaStream_t stream) {
  if (a.precision == Precision::bf16)
    wgmma_for_head_dim<true>(a, q, k, v, o, lse, stream);
  else
    wgmma_for_head_dim<false>(a, q, k, v, o, lse, stream);
}

}  // namespace minictx::cuda
