#include <cmath>

#include "core/cuda/cuda_check.hpp"
#include "device/cuda/attention_common.cuh"
#include "device/cuda/flash_attention.hpp"
#include "device/cuda/flash_rows.cuh"
#include "device/cuda/mma_fragments.cuh"

// The forward flash kernel (FlashAttention-2, Algorithm 1): a thread block owns
// kWarps·kMt·16 queries of one head, each warp kMt m-tiles of 16 (each K/V fragment it
// loads feeds all of them), and walks the visible key tiles with K/V double-buffered in
// shared memory (cp.async). S = QKᵀ and the online softmax (exp2, log2(e) folded into the
// scale) stay in registers, and P feeds O += PV as A fragments without a trip through
// shared memory. The block's (O, LSE) is merged into the running one in the epilogue.
// With documents in the kernel (kDocs: flash_fwd_sm80_documents), the block walks only the
// keys of its queries' documents and masks each row by its document's span.
namespace minictx::cuda {
namespace {

using namespace attn;

template <int kD, int kWarpsPerBlock, int kKeyTile, int kMTiles>
struct FwdShape {
  static constexpr int kWarps = kWarpsPerBlock, kBc = kKeyTile, kMt = kMTiles;
  static constexpr int kBr = kWarps * 16 * kMt;
  static constexpr int kThreads = kWarps * kWarp;
  static constexpr int kTile = kBc * kD;  // elements of one K or V stage
  static constexpr size_t kSharedBytes = size_t(kBr * kD + 4 * kTile) * 2 + size_t(2 * kBc) * sizeof(int64_t);
};

template <int kD, int kWarps, int kBc, int kMt, bool kBf16, bool kDocs>
__global__ void __launch_bounds__(kWarps* kWarp)
    flash_fwd_kernel(AttnArgs a, const typename mma::Operand<kBf16>::type* __restrict__ q,
                     const typename mma::Operand<kBf16>::type* __restrict__ k,
                     const typename mma::Operand<kBf16>::type* __restrict__ v, float* o, float* lse) {
  using T = typename mma::Operand<kBf16>::type;
  using Shape = FwdShape<kD, kWarps, kBc, kMt>;
  constexpr int kBr = Shape::kBr, kThreads = Shape::kThreads, kTile = Shape::kTile;
  extern __shared__ __align__(128) unsigned char shared[];
  T* qs = reinterpret_cast<T*>(shared);
  T* ks = qs + kBr * kD;                                    // 2 stages
  T* vs = ks + 2 * kTile;                                   // 2 stages
  auto* kpos = reinterpret_cast<int64_t*>(vs + 2 * kTile);  // 2 stages of kBc

  const int warp = int(threadIdx.x) / kWarp, lane = int(threadIdx.x) % kWarp;
  const int group = lane >> 2, tig = lane & 3;
  const QueryTile tile = query_tile<kBr>(a);
  if (tile.keys == 0) return;                         // nothing visible: the running (o, lse) stays
  const KeyRange keys = walked_keys<kDocs>(a, tile);  // with documents, its queries' documents
  if (kDocs && keys.end == keys.first) return;
  const int b = tile.b, h = tile.h, g = tile.g, tq = tile.tq,
            tiles = int((keys.end - keys.first + kBc - 1) / kBc);
  const int64_t i0 = tile.i0, first_query = tile.first_query;

  const int64_t kv_stride = int64_t(a.kv_heads) * kD;
  const T* k_rows = k + (int64_t(b) * a.k_len * a.kv_heads + g) * kD + keys.first * kv_stride;
  const T* v_rows = v + (int64_t(b) * a.k_len * a.kv_heads + g) * kD + keys.first * kv_stride;
  auto load_kv = [&](int t) {
    mma::load_kv_stage<kBc, kD, kThreads>(ks, vs, kpos, k_rows, v_rows, kv_stride, a.k_pos + keys.first,
                                          a.k_len - keys.first, t);
  };

  mma::load_tile_async<kBr, kD, kThreads>(qs, q + ((int64_t(b) * a.q_len + i0) * a.heads + h) * kD,
                                          int64_t(a.heads) * kD, tq);
  load_kv(0);
  mma::cp_async_commit();

  // This thread's query rows: group and group + 8 of each of the warp's m-tiles.
  constexpr int kRows = 2 * kMt;
  int64_t qpos[kRows];
#pragma unroll
  for (int rr = 0; rr < kRows; ++rr) qpos[rr] = a.q_pos[i0 + min(row_of<kMt>(warp, group, rr), tq - 1)];
  RowSpans<kRows> spans;
  if constexpr (kDocs) {
#pragma unroll
    for (int rr = 0; rr < kRows; ++rr)
      spans.set(rr, query_span(a, b, i0 + min(row_of<kMt>(warp, group, rr), tq - 1)));
  }
  const float scale_log2 = a.scale * kLog2e;
  float row_max[kRows], row_sum[kRows];
#pragma unroll
  for (int rr = 0; rr < kRows; ++rr) {
    row_max[rr] = -INFINITY;
    row_sum[rr] = 0.0f;
  }
  float acc[kMt][kD / 8][4] = {};

  for (int t = 0; t < tiles; ++t) {
    mma::pipeline_step(t + 1 < tiles, [&] { load_kv(t + 1); });
    const T* kt = ks + (t & 1) * kTile;
    const T* vt = vs + (t & 1) * kTile;
    const int64_t* kp = kpos + (t & 1) * kBc;

    float s[kMt][kBc / 8][4] = {};
#pragma unroll
    for (int kc = 0; kc < kD / 16; ++kc) {
      uint32_t qm[kMt][4];
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt)
        mma::ldmatrix_x4(qm[mt], mma::a_rows<kD>(qs, (warp * kMt + mt) * 16, kc * 16, lane));
#pragma unroll
      for (int np = 0; np < kBc / 16; ++np) {
        uint32_t bf[4];
        mma::ldmatrix_x4(bf, mma::b_rows<kD>(kt, np * 16, kc * 16, lane));
#pragma unroll
        for (int mt = 0; mt < kMt; ++mt) {
          mma::mma_16816_x2<kBf16>(s[mt][2 * np], s[mt][2 * np + 1], qm[mt], bf);
        }
      }
    }
    // Only tiles that reach padding, the block's end or (causally) past the first query
    // need the per-element mask; with documents, every tile.
    const int valid = tile_rows(a.k_len - keys.first - int64_t(t) * kBc, kBc);
    const int64_t last_key = kp[valid - 1];
    if (kDocs || valid < kBc || last_key >= a.real_len || (a.causal && last_key > first_query))
      mask_scores<kMt, kBc, kDocs>(s, a, kp, qpos, valid, tig, &spans);
    online_softmax<kMt, kBc, kD>(s, acc, row_max, row_sum, scale_log2);
#pragma unroll
    for (int kc = 0; kc < kBc / 16; ++kc) {
      uint32_t pa[kMt][4];
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt) mma::a_from_c<kBf16>(pa[mt], s[mt][2 * kc], s[mt][2 * kc + 1]);
#pragma unroll
      for (int dp = 0; dp < kD / 16; ++dp) {
        uint32_t bf[4];
        mma::ldmatrix_x4_trans(bf, mma::b_cols<kD>(vt, kc * 16, dp * 16, lane));
#pragma unroll
        for (int mt = 0; mt < kMt; ++mt) {
          mma::mma_16816_x2<kBf16>(acc[mt][2 * dp], acc[mt][2 * dp + 1], pa[mt], bf);
        }
      }
    }
  }

  merge_rows<kMt, kD>(acc, row_max, row_sum, a, o, lse, b, h, i0, tq, warp, group, tig);
}

// The forward at head dim kD on its tiles (tile_sizes.hpp): a warp owns kSm80FwdMTiles
// m-tiles of 16 queries.
template <int kD>
using Sm80Fwd =
    FwdShape<kD, sm80_tiles(kD).fwd_q / (16 * kSm80FwdMTiles), sm80_tiles(kD).fwd_k, kSm80FwdMTiles>;

template <int kD, bool kBf16, bool kDocs>
void launch_fwd(const AttnArgs& a, const void* q, const void* k, const void* v, float* o, float* lse,
                cudaStream_t stream) {
  using T = typename mma::Operand<kBf16>::type;
  using Shape = Sm80Fwd<kD>;
  constexpr auto kernel = flash_fwd_kernel<kD, Shape::kWarps, Shape::kBc, Shape::kMt, kBf16, kDocs>;
  allow_shared_memory<kernel>(Shape::kSharedBytes, "flash_fwd shared memory");
  const dim3 grid(unsigned((a.q_len + Shape::kBr - 1) / Shape::kBr), unsigned(a.batch * a.heads));
  kernel<<<grid, Shape::kThreads, Shape::kSharedBytes, stream>>>(
      a, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), o, lse);
}

}  // namespace

size_t flash_fwd_sm80_shared_bytes(int head_dim) {
  return for_head_dim(head_dim, [](auto d) { return Sm80Fwd<decltype(d)::value>::kSharedBytes; });
}

void flash_fwd_sm80(const AttnArgs& a, const void* q, const void* k, const void* v, float* o, float* lse,
                    cudaStream_t stream) {
  for_flash_shape(a, [&](auto d, auto bf16) {
    launch_fwd<decltype(d)::value, decltype(bf16)::value, false>(a, q, k, v, o, lse, stream);
  });
}

void flash_fwd_sm80_documents(const AttnArgs& a, const void* q, const void* k, const void* v, float* o,
                              float* lse, cudaStream_t stream) {
  for_flash_shape(a, [&](auto d, auto bf16) {
    launch_fwd<decltype(d)::value, decltype(bf16)::value, true>(a, q, k, v, o, lse, stream);
  });
}

}  // namespace minictx::cuda
