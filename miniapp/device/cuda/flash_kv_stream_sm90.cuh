#pragma once
#include <cstdint>

#include "device/cuda/tile_sizes.hpp"
#include "device/cuda/tma_pipeline.cuh"
#include "device/cuda/wgmma_fragments.cuh"

// The key/value side of the TMA-fed forward (flash_fwd_sm90.cu), which owns a query tile
// and walks its key tiles: a ring of kStages stages of one K and one V tile of kKeyTile
// keys, which one producer thread fills with TMA and every consumer warp frees, K and V
// apart (the forward is done with K before V); and one barrier for the tile the block
// loads once (its Q tile). Shared memory: the K tiles, then the V tiles, at 1024-byte aligned addresses; the
// barriers elsewhere (8-byte aligned).
namespace minictx::cuda::tma {

template <int kStages, int kKeyTile, int kD, int kConsumerWarps>
struct KvStream {
  static constexpr int kTileBytes = kKeyTile * kD * 2;
  static constexpr int kTileBytesAll = 2 * kStages * kTileBytes;
  // The resident tiles loaded; per stage: K loaded, V loaded, K free, V free.
  static constexpr int kBarriers = 1 + 4 * kStages;

  uint32_t ks, vs, barriers;

  __device__ KvStream(uint32_t tiles, uint32_t barrier_block)
      : ks(tiles), vs(tiles + kStages * kTileBytes), barriers(barrier_block) {}

  __device__ static int stage(int t) { return t % kStages; }
  __device__ static uint32_t parity(int t) { return uint32_t(t / kStages) & 1; }
  __device__ uint32_t k_tile(int t) const { return ks + uint32_t(stage(t) * kTileBytes); }
  __device__ uint32_t v_tile(int t) const { return vs + uint32_t(stage(t) * kTileBytes); }

  __device__ uint32_t resident_loaded() const { return barriers; }
  __device__ uint32_t barrier(int kind, int t) const {
    return barriers + 8u * uint32_t(1 + kind * kStages + stage(t));
  }
  __device__ uint32_t k_loaded(int t) const { return barrier(0, t); }
  __device__ uint32_t v_loaded(int t) const { return barrier(1, t); }
  __device__ uint32_t k_free(int t) const { return barrier(2, t); }
  __device__ uint32_t v_free(int t) const { return barrier(3, t); }

  // One thread, before the block's __syncthreads().
  __device__ void init() const {
    barrier_init(resident_loaded(), 1);
    for (int s = 0; s < kStages; ++s) {
      barrier_init(k_loaded(s), 1);
      barrier_init(v_loaded(s), 1);
      barrier_init(k_free(s), kConsumerWarps);
      barrier_init(v_free(s), kConsumerWarps);
    }
    fence_barrier_init();
  }

  // The producer thread: key tiles 0..key_tiles-1 (from key row first_key) of KV head g,
  // batch b, each stage
  // refilled once the consumers have freed its previous K, then its V (the first round
  // passes at once). Then the tail: it waits until every tile is freed before it exits, so
  // that a consumer stuck on a copy ends in this thread's trap (its waits are bounded)
  // instead of a hang.
  __device__ void produce(const CUtensorMap* k_map, const CUtensorMap* v_map, int g, int b, int key_tiles,
                          int64_t first_key = 0) const {
    for (int t = 0; t < key_tiles; ++t) {
      wait_or_trap(k_free(t), parity(t) ^ 1);
      arrive_expect_bytes(k_loaded(t), kTileBytes);
      load_tile<kKeyTile, kD>(k_tile(t), k_map, k_loaded(t), g, first_key + int64_t(t) * kKeyTile, b);
      wait_or_trap(v_free(t), parity(t) ^ 1);
      arrive_expect_bytes(v_loaded(t), kTileBytes);
      load_tile<kKeyTile, kD>(v_tile(t), v_map, v_loaded(t), g, first_key + int64_t(t) * kKeyTile, b);
    }
    for (int t = key_tiles > kStages ? key_tiles - kStages : 0; t < key_tiles; ++t) {
      wait_or_trap(k_free(t), parity(t));
      wait_or_trap(v_free(t), parity(t));
    }
  }

  // A consumer thread's side (the frees by all lanes of a warp together).
  __device__ void wait_k(int t) const { wait(k_loaded(t), parity(t)); }
  __device__ void wait_v(int t) const { wait(v_loaded(t), parity(t)); }
  __device__ void free_k(int t) const { arrive_for_warp(k_free(t)); }
  __device__ void free_v(int t) const { arrive_for_warp(v_free(t)); }
};

// The block of a kernel that owns a query tile and walks its key tiles through the ring:
// a producer warpgroup, then consumer warpgroups of 64 queries each (wgmma's M), the
// producer's registers handed to the consumers' accumulators (setmaxnreg); how many, the
// key tile, the stages and the registers: tile_sizes.hpp.
struct QueryBlock {
  static constexpr int kConsumers = kSm90FwdConsumers;
  static constexpr int kRows = 64 * kConsumers;
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int kStages = kSm90FwdStages, kKeyTile = kSm90FwdKeyTile;
  static constexpr int kProducerRegisters = kSm90FwdProducerRegisters;
  static constexpr int kConsumerRegisters = kSm90FwdConsumerRegisters;
  template <int kD>
  using Stream = KvStream<kStages, kKeyTile, kD, 4 * kConsumers>;
  // One 16-bit [kRows, kD] tile the block keeps resident (its Q tile).
  template <int kD>
  static constexpr int kQueryTileBytes = kRows* kD * 2;

  // Shared memory: the block's resident tiles (resident_bytes, from the aligned start),
  // the ring's tiles, its barriers.
  template <int kD>
  static constexpr size_t shared_bytes(int resident_bytes) {
    return wgmma::kAlignmentSlack + size_t(resident_bytes + Stream<kD>::kTileBytesAll) +
           size_t(Stream<kD>::kBarriers) * 8;
  }

  // Host: that the kernel's registers at launch cover the split (check_register_split).
  template <auto kKernel>
  static void check_registers(const char* what) {
    check_register_split<kKernel>(kConsumers, kProducerRegisters, kConsumerRegisters, what);
  }

  // Sets the ring's barriers, then splits the block: the producer warpgroup gives its
  // registers up and its first thread runs load_resident() (copies that complete on
  // kv.resident_loaded()) and streams the key tiles of KV head g, batch b, from key row
  // first_key; the producer's threads get true, and exit. The consumers claim the
  // registers and get false.
  template <int kD, class LoadResident>
  __device__ static bool produce(const Stream<kD>& kv, const CUtensorMap* k_map, const CUtensorMap* v_map,
                                 int g, int b, int key_tiles, LoadResident&& load_resident,
                                 int64_t first_key = 0) {
    if (!is_producer<kProducerRegisters, kConsumerRegisters>([&] { kv.init(); })) return false;
    if (threadIdx.x == 0) {
      load_resident();
      kv.produce(k_map, v_map, g, b, key_tiles, first_key);
    }
    return true;
  }
};
static_assert(register_split_fits(QueryBlock::kConsumers, QueryBlock::kProducerRegisters,
                                  QueryBlock::kConsumerRegisters),
              "the consumers claim no more registers than the producer gives up");

}  // namespace minictx::cuda::tma
