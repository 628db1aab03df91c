#pragma once

// Every tile the CUDA attention kernels use, in one place (as FlashAttention-3's
// tile_size.h): the kernels take their template arguments from here, and the kernel-family
// table (kernel_families.cpp) prints them for the provenance and `minictx list`. Plain
// C++, so host code reads it without the CUDA headers. The flash tiles were chosen on an
// H100 (docs/performance.md, "One GPU against its GEMM limit"; every tile: docs/nvidia.md,
// "Tiles").
namespace minictx::cuda {

// A flash family's tiles, query rows × key rows per thread block of each pass.
struct FlashTiles {
  int fwd_q, fwd_k;  // forward: a block owns fwd_q queries and walks key tiles of fwd_k
  int bwd_q, bwd_k;  // dK/dV: a block owns bwd_k keys and walks query tiles of bwd_q
  int dq_q, dq_k;    // dQ: a block owns dq_q queries and walks key tiles of dq_k
};

// sm80: mma.sync m16n8k16 (flash_fwd_sm80.cu, flash_bwd_sm80.cu). A forward warp owns
// kSm80FwdMTiles m-tiles of 16 queries (each K/V fragment it loads feeds all of them), a
// backward warp 16 keys (dK/dV pass) or 16 queries (dQ pass): fwd_q / 32, bwd_k / 16 and
// dq_q / 16 are the warps of a block.
constexpr int kSm80FwdMTiles = 2;
constexpr FlashTiles sm80_tiles(int head_dim) {
  return head_dim == 64 ? FlashTiles{128, 64, 64, 128, 64, 64} : FlashTiles{128, 32, 32, 128, 64, 32};
}

// sm90, forward (flash_fwd_sm90.cu): a producer warpgroup streams K/V tiles of
// kSm90FwdKeyTile keys with TMA through a ring of kSm90FwdStages stages to
// kSm90FwdConsumers consumer warpgroups of 64 queries each (wgmma's M), the producer's
// registers handed to the consumers' accumulators (setmaxnreg).
constexpr int kSm90FwdConsumers = 2;
constexpr int kSm90FwdKeyTile = 128;
constexpr int kSm90FwdStages = 2;
constexpr int kSm90FwdProducerRegisters = 24, kSm90FwdConsumerRegisters = 240;
// sm90, backward (flash_bwd_sm90.cu): one warpgroup per block owns kSm90BwdRows keys
// (dK/dV) or queries (dQ), wgmma's M. The dK/dV pass's query tile holds dK and dV (D / 2
// registers a thread each) beside Sᵀ and dPᵀ (tile / 2 each); the dQ pass walks key tiles
// of kSm90DqKeyTile.
constexpr int kSm90BwdRows = 64;
constexpr int sm90_dkdv_query_tile(int head_dim) { return head_dim == 64 ? 64 : 32; }
constexpr int kSm90DqKeyTile = 64;
constexpr FlashTiles sm90_tiles(int head_dim) {
  return {64 * kSm90FwdConsumers, kSm90FwdKeyTile, sm90_dkdv_query_tile(head_dim),
          kSm90BwdRows,           kSm90BwdRows,    kSm90DqKeyTile};
}

// sm90, one-pass backward (flash_bwd_sm90_onepass.cu, the sm90-onepass family): a block
// owns 64 · kSm90OnepassConsumers keys, 64 per consumer warpgroup (wgmma's M), and a
// producer warpgroup streams query tiles of kSm90OnepassQueryTile (Q, dO and their LSE,
// delta and positions) through a ring of kSm90OnepassStages stages; dQ of each query tile
// (its 64 rows, wgmma's M again) is formed from the block's keys beside dK and dV. A
// consumer holds dK and dV (D / 2 registers a thread each), Sᵀ and dPᵀ (query tile / 2
// each) and its share of dQ (D / 4).
constexpr int kSm90OnepassConsumers = 2;
constexpr int kSm90OnepassQueryTile = 64;
constexpr int kSm90OnepassStages = 2;
constexpr int kSm90OnepassProducerRegisters = 24, kSm90OnepassConsumerRegisters = 240;
constexpr FlashTiles sm90_onepass_tiles(int head_dim) {
  const FlashTiles fwd = sm90_tiles(head_dim);
  constexpr int kKeys = 64 * kSm90OnepassConsumers;
  return {fwd.fwd_q, fwd.fwd_k, kSm90OnepassQueryTile, kKeys, kSm90OnepassQueryTile, kKeys};
}

// SIMT (attention_simt.cu), any head dim up to kMaxHeadDim: 128 threads a block; a warp
// owns whole query (or key) rows and a lane one key (or query) of a tile of 32. Rows per
// warp: the forward's queries, the dK/dV pass's keys, the dQ pass's queries. These keep
// the static shared memory under 48 KiB at every head dim.
constexpr int kMaxHeadDim = 128;
constexpr int kSimtThreads = 128;
constexpr int kSimtFwdRows = 4;
constexpr int kSimtDkvRows = 2;
constexpr int kSimtDqRows = 2;

}  // namespace minictx::cuda
