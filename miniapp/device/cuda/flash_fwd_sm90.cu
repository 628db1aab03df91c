#include "core/cuda/cuda_check.hpp"
#include "device/cuda/attention_common.cuh"
#include "device/cuda/flash_attention.hpp"
#include "device/cuda/flash_fwd_sm90_tile.cuh"
#include "device/cuda/flash_kv_stream_sm90.cuh"
#include "device/cuda/flash_rows.cuh"
#include "device/cuda/mma_fragments.cuh"
#include "device/cuda/tma_pipeline.cuh"
#include "device/cuda/wgmma_fragments.cuh"

// The forward flash kernel with FlashAttention-3's division of labour (sm_90a): a block
// of three warpgroups owns 128 queries of one head. The producer warpgroup gives its
// registers up and one of its threads streams the Q tile and the K/V tiles with TMA into
// a ring of two stages (flash_kv_stream_sm90.cuh), each stage's arrival counted on an
// mbarrier; the two consumer warpgroups own 64 queries each and run the wgmma forward's
// steps on every key tile (flash_fwd_sm90_tile.cuh: S = QKᵀ from shared memory, mask and
// online softmax in registers, O += PV with P in registers), freeing the K tile once S is
// formed and the V tile after PV, each on an mbarrier of its own, for the producer to
// refill. Both consumers read each K/V tile once loaded, so a tile feeds 128 queries, and
// no consumer thread spends an instruction on loads. As in FlashAttention-3, each
// consumer overlaps one tile's softmax with its products (the scores of tile t and the PV
// product of tile t − 1 are issued together) and the two consumers take turns at issuing
// (ping-pong, tma::ConsumerTurns), so the other's softmax runs under one's products.
// With documents in the kernel (kDocs: flash_fwd_sm90_documents), the block streams only the
// keys of its queries' documents and masks each row by its document's span.
namespace minictx::cuda {
namespace {

using namespace attn;

using Block = tma::QueryBlock;
constexpr int kRowsPerBlock = Block::kRows, kKeyTile = Block::kKeyTile;
static_assert(sm90_tiles(64).fwd_q == kRowsPerBlock && sm90_tiles(64).fwd_k == kKeyTile,
              "the family table prints the tiles this kernel runs");

template <int kD, bool kBf16, bool kDocs>
__global__ void __launch_bounds__(Block::kThreads, 1)
    flash_fwd_tma_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                         const __grid_constant__ CUtensorMap v_map, AttnArgs a, float* o, float* lse) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char shared[];
  unsigned char* aligned = wgmma::aligned_tiles(shared);
  const uint32_t qs = mma::shared_address(aligned), tiles = qs + Block::kQueryTileBytes<kD>;
  const Block::Stream<kD> kv(tiles, tiles + Block::Stream<kD>::kTileBytesAll);

  const QueryTile tile = query_tile<kRowsPerBlock>(a);
  if (tile.keys == 0) return;                         // nothing visible: the running (o, lse) stays
  const KeyRange keys = walked_keys<kDocs>(a, tile);  // with documents, its queries' documents
  if (kDocs && keys.end == keys.first) return;
  const int key_tiles = int((keys.end - keys.first + kKeyTile - 1) / kKeyTile);

  // The producer: the Q tile once, then the K/V tiles (K is freed once S is formed, so
  // the next K loads under the PV product).
  if (Block::produce<kD>(
          kv, &k_map, &v_map, tile.g, tile.b, key_tiles,
          [&] {
            tma::arrive_expect_bytes(kv.resident_loaded(), Block::kQueryTileBytes<kD>);
            tma::load_tile<kRowsPerBlock, kD>(qs, &q_map, kv.resident_loaded(), tile.h, tile.i0, tile.b);
          },
          keys.first))
    return;

  // Consumer warp w (0..7) holds rows 16w..16w+15 of the block, in warpgroup w / 4.
  const int warp = int(threadIdx.x) / kWarp - 4, lane = int(threadIdx.x) % kWarp;
  const int group = lane >> 2, tig = lane & 3;
  const uint32_t q_rows = qs + uint32_t((warp / 4) * 64 * 128);  // the warpgroup's 64 rows of each slab
  WgmmaForwardRows<kD> rows = wgmma_forward_rows<kD>(a, tile.i0, tile.tq, warp, group);
  RowSpans<2> spans;
  if constexpr (kDocs) {
#pragma unroll
    for (int rr = 0; rr < 2; ++rr)
      spans.set(rr, query_span(a, tile.b, tile.i0 + min(row_of<1>(warp, group, rr), tile.tq - 1)));
  }
  const float scale_log2 = a.scale * kLog2e;
  auto positions = [&](int t) { return a.k_pos + keys.first + int64_t(t) * kKeyTile; };

  // Tile 0's scores and softmax alone; then each turn issues tile t's scores and tile
  // t − 1's PV product together and runs tile t's softmax while PV is in flight,
  // rescaling the output once it has landed; the last PV product after the loop. Both
  // consumers walk the same key tiles, as their turns require.
  float s[1][kKeyTile / 8][4];
  uint32_t pa[kKeyTile / 16][4];
  float rescale[2];  // per row, held until the PV product in flight has landed
  auto hold = [&](int rr, float factor) { rescale[rr] = factor; };
  tma::wait(kv.resident_loaded(), 0);
  kv.wait_k(0);
  issue_scores<kRowsPerBlock, kKeyTile, kD, kBf16>(s, q_rows, kv.k_tile(0));
  wgmma::wait<0>();
  wgmma::fence_operands(s[0]);
  kv.free_k(0);  // this warp's reads of the K tile are done
  score_softmax<kKeyTile, kD, kDocs>(s, rows, positions(0), 0, tile.first_query, a, scale_log2, tig, hold,
                                     keys.first, &spans);
  probabilities_as_a<kKeyTile, kBf16>(s, pa);  // the output is still zero: no rescale

  const tma::ConsumerTurns turns{warp / 4, key_tiles - 1};
  for (int t = 1; t < key_tiles; ++t) {
    kv.wait_k(t);
    turns.take(t - 1);
    issue_scores<kRowsPerBlock, kKeyTile, kD, kBf16>(s, q_rows, kv.k_tile(t));
    kv.wait_v(t - 1);
    issue_values<kKeyTile, kD, kBf16>(rows.acc, pa, kv.v_tile(t - 1));
    turns.hand_over(t - 1);
    wgmma::wait<1>();  // the scores have landed, PV may not have
    wgmma::fence_operands(s[0]);
    kv.free_k(t);
    score_softmax<kKeyTile, kD, kDocs>(s, rows, positions(t), t, tile.first_query, a, scale_log2, tig, hold,
                                       keys.first, &spans);
    wgmma::wait<0>();
    wgmma::fence_operands(rows.acc[0]);
    wgmma::fence_operands(pa);
    kv.free_v(t - 1);
    rescale_row<1, kD>(rows.acc, 0, rescale[0]);
    rescale_row<1, kD>(rows.acc, 1, rescale[1]);
    probabilities_as_a<kKeyTile, kBf16>(s, pa);
  }
  const int last = key_tiles - 1;
  kv.wait_v(last);
  issue_values<kKeyTile, kD, kBf16>(rows.acc, pa, kv.v_tile(last));
  wgmma::wait<0>();
  wgmma::fence_operands(rows.acc[0]);
  wgmma::fence_operands(pa);
  kv.free_v(last);

  merge_rows<1, kD>(rows.acc, rows.row_max, rows.row_sum, a, o, lse, tile.b, tile.h, tile.i0, tile.tq, warp,
                    group, tig);
#else
  __trap();  // built without sm_90a: flash_sm90_available() never chooses this kernel
#endif
}

template <int kD, bool kBf16, bool kDocs>
void launch_fwd_tma(const AttnArgs& a, const void* q, const void* k, const void* v, float* o, float* lse,
                    cudaStream_t stream) {
  constexpr auto kernel = flash_fwd_tma_kernel<kD, kBf16, kDocs>;
  constexpr size_t kSharedBytes = Block::shared_bytes<kD>(Block::kQueryTileBytes<kD>);
  allow_shared_memory<kernel>(kSharedBytes, "flash_fwd_tma shared memory");
  Block::check_registers<kernel>("flash_fwd_tma registers");
  // The operands are compact [batch, len, heads, D] copies (flash_attention.hpp).
  const CUtensorMap q_map = tma::tile_map(q, kBf16, a.batch, a.q_len, a.heads, kD, kRowsPerBlock);
  const CUtensorMap k_map = tma::tile_map(k, kBf16, a.batch, a.k_len, a.kv_heads, kD, kKeyTile);
  const CUtensorMap v_map = tma::tile_map(v, kBf16, a.batch, a.k_len, a.kv_heads, kD, kKeyTile);
  const dim3 grid(unsigned((a.q_len + kRowsPerBlock - 1) / kRowsPerBlock), unsigned(a.batch * a.heads));
  kernel<<<grid, Block::kThreads, kSharedBytes, stream>>>(q_map, k_map, v_map, a, o, lse);
}

}  // namespace

void flash_fwd_sm90(const AttnArgs& a, const void* q, const void* k, const void* v, float* o, float* lse,
                    cudaStream_t stream) {
  for_flash_shape(a, [&](auto d, auto bf16) {
    launch_fwd_tma<decltype(d)::value, decltype(bf16)::value, false>(a, q, k, v, o, lse, stream);
  });
}

void flash_fwd_sm90_documents(const AttnArgs& a, const void* q, const void* k, const void* v, float* o,
                              float* lse, cudaStream_t stream) {
  for_flash_shape(a, [&](auto d, auto bf16) {
    launch_fwd_tma<decltype(d)::value, decltype(bf16)::value, true>(a, q, k, v, o, lse, stream);
  });
}

}  // namespace minictx::cuda
