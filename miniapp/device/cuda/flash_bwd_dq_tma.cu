#include "device/cuda/attention_common.cuh"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/flash_attention.hpp"
#include "device/cuda/flash_bwd_wgmma_tile.cuh"
#include "device/cuda/flash_kv_stream.cuh"
#include "device/cuda/flash_rows.cuh"
#include "device/cuda/mma_fragments.cuh"
#include "device/cuda/tma_pipeline.cuh"
#include "device/cuda/wgmma_fragments.cuh"

// The backward's dQ pass with the TMA forward's division of labour (sm_90a): a block of
// three warpgroups owns 128 queries of one head. One thread of the producer warpgroup
// copies the block's Q and dO tiles once, then streams the K/V tiles of 128 keys through
// the forward's ring (flash_kv_stream.cuh); the two consumer warpgroups own 64 queries each and run
// the wgmma dQ step on every key tile (flash_bwd_wgmma_tile.cuh: S = QKᵀ and dP = dO Vᵀ,
// dS in registers, dQ += dS K), then free its stage (the producer refills a stage once
// both tiles are free, and both are read from the first product on). A K/V tile thus
// feeds 128 queries, twice the cp.async pass's 64.
// Not yet in it: the forward's overlap of softmax and products, and its ping-pong.
namespace minictx::cuda {
namespace {

using namespace attn;

// The forward's block and ring (tma::QueryBlock). Its K/V tiles of 128 keys fit here too:
// dQ (kD / 2 registers a thread) beside S and dP (64 each) and dS (32) fit the consumers'
// 240 registers (ptxas: no spill), and S and dP take wgmma's widest N.
using Block = tma::QueryBlock;
constexpr int kRowsPerBlock = Block::kRows, kKeyTile = Block::kKeyTile;

template <int kD, bool kBf16>
__global__ void __launch_bounds__(Block::kThreads, 1)
    flash_bwd_dq_tma_kernel(const __grid_constant__ CUtensorMap q_map,
                            const __grid_constant__ CUtensorMap k_map,
                            const __grid_constant__ CUtensorMap v_map,
                            const __grid_constant__ CUtensorMap do_map, AttnArgs a,
                            const float* __restrict__ lse, const float* __restrict__ delta, float* dq) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char shared[];
  unsigned char* aligned = wgmma::aligned_tiles(shared);
  const uint32_t qs = mma::shared_address(aligned), dos = qs + Block::kQueryTileBytes<kD>,
                 tiles = dos + Block::kQueryTileBytes<kD>;
  const Block::Stream<kD> kv(tiles, tiles + Block::Stream<kD>::kTileBytesAll);

  const QueryTile tile = query_tile<kRowsPerBlock>(a);
  if (tile.keys == 0) return;  // no visible key: dQ stays
  const int key_tiles = int((tile.keys + kKeyTile - 1) / kKeyTile);

  // The producer: the Q and dO tiles once, then the K/V tiles.
  if (Block::produce<kD>(kv, &k_map, &v_map, tile.g, tile.b, key_tiles, [&] {
        tma::arrive_expect_bytes(kv.resident_loaded(), 2 * Block::kQueryTileBytes<kD>);
        tma::load_tile<kRowsPerBlock, kD>(qs, &q_map, kv.resident_loaded(), tile.h, tile.i0, tile.b);
        tma::load_tile<kRowsPerBlock, kD>(dos, &do_map, kv.resident_loaded(), tile.h, tile.i0, tile.b);
      }))
    return;

  // Consumer warp w (0..7) holds queries 16w..16w+15 of the block, in warpgroup w / 4.
  const int warp = int(threadIdx.x) / kWarp - 4, lane = int(threadIdx.x) % kWarp;
  const int group = lane >> 2, tig = lane & 3;
  const uint32_t half = uint32_t((warp / 4) * 64 * 128);  // the warpgroup's 64 rows of each slab
  const DqRows rows = dq_rows(a, tile, lse, delta, warp, group);
  const float scale_log2 = a.scale * kLog2e;
  float dq_acc[kD / 8][4] = {};

  tma::wait(kv.resident_loaded(), 0);
  for (int t = 0; t < key_tiles; ++t) {
    kv.wait_k(t);
    kv.wait_v(t);
    wgmma_dq_tile<kRowsPerBlock, kKeyTile, kD, kBf16>(dq_acc, rows, qs + half, dos + half, kv.k_tile(t),
                                                      kv.v_tile(t), a.k_pos + int64_t(t) * kKeyTile, t,
                                                      tile.first_query, tig, scale_log2, a);
    kv.free_k(t);  // this warp's reads of the tiles are done
    kv.free_v(t);
  }

  add_dq<kD>(dq_acc, a, tile, dq, warp, group, tig);
#else
  __trap();  // built without sm_90a: flash_wgmma_available() never chooses this kernel
#endif
}

template <int kD, bool kBf16>
void launch_dq_tma(const AttnArgs& a, const void* q, const void* k, const void* v, const void* dout,
                   const float* lse, const float* delta, float* dq, cudaStream_t stream) {
  constexpr auto kernel = flash_bwd_dq_tma_kernel<kD, kBf16>;
  constexpr size_t kSharedBytes = Block::shared_bytes<kD>(2 * Block::kQueryTileBytes<kD>);
  allow_shared_memory<kernel>(kSharedBytes, "flash_bwd_dq_tma shared memory");
  Block::check_registers<kernel>("flash_bwd_dq_tma registers");
  // The operands are compact [batch, len, heads, D] copies (flash_attention.hpp).
  const CUtensorMap q_map = tma::tile_map(q, kBf16, a.batch, a.q_len, a.heads, kD, kRowsPerBlock);
  const CUtensorMap do_map = tma::tile_map(dout, kBf16, a.batch, a.q_len, a.heads, kD, kRowsPerBlock);
  const CUtensorMap k_map = tma::tile_map(k, kBf16, a.batch, a.k_len, a.kv_heads, kD, kKeyTile);
  const CUtensorMap v_map = tma::tile_map(v, kBf16, a.batch, a.k_len, a.kv_heads, kD, kKeyTile);
  const dim3 grid(unsigned((a.q_len + kRowsPerBlock - 1) / kRowsPerBlock), unsigned(a.batch * a.heads));
  kernel<<<grid, Block::kThreads, kSharedBytes, stream>>>(q_map, k_map, v_map, do_map, a, lse, delta, dq);
}

}  // namespace

FlashTiles with_dq_tma_tiles(FlashTiles t) {
  t.dq_q = kRowsPerBlock;
  t.dq_k = kKeyTile;
  return t;
}

void flash_bwd_dq_tma(const AttnArgs& a, const void* q, const void* k, const void* v, const void* dout,
                      const float* lse, const float* delta, float* dq, cudaStream_t stream) {
  for_flash_shape(a, [&](auto d, auto bf16) {
    launch_dq_tma<decltype(d)::value, decltype(bf16)::value>(a, q, k, v, dout, lse, delta, dq, stream);
  });
}

}  // namespace minictx::cuda
