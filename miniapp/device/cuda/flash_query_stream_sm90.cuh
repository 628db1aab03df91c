#pragma once
#include <cstdint>

#include "device/cuda/attention_common.cuh"
#include "device/cuda/mma_fragments.cuh"
#include "device/cuda/tile_sizes.hpp"
#include "device/cuda/tma_pipeline.cuh"
#include "device/cuda/wgmma_fragments.cuh"

// The query side of the one-pass backward (flash_bwd_sm90_onepass.cu), which owns a key
// tile and walks the query tiles that see it. In: a ring of kStages stages, each one Q and
// one dO tile of kQueryTile rows, which one producer thread fills with TMA, and the tile's
// positions, LSE and delta, which one producer warp copies with plain loads (a tile's
// vectors start at any row, where TMA needs 16-byte alignment); every consumer warp frees
// a stage once its products on it have landed. Out: the step's dQ tile, fp32, which the
// consumers write and the producer's dQ warp adds to dq in global memory by bulk
// reduce-adds, one a row, then hands back. One barrier more for the tiles the block loads
// once (its K and V). Shared memory, from a 1024-byte aligned start: the Q tiles, the dO
// tiles, the dQ tile, the vectors, the barriers.
namespace minictx::cuda::tma {

// Where a step's query tile lies: query head `head`, rows from `row`.
struct QueryTileAt {
  int head;
  int64_t row;
};

template <int kStages, int kQueryTile, int kD, int kConsumerWarps>
struct QueryStream {
  static constexpr int kTileBytes = kQueryTile * kD * 2;
  static constexpr int kTileBytesAll = 2 * kStages * kTileBytes;
  // dQ rows 32 bytes apart beyond their values: a warp's float2 stores of 4 rows × 8
  // columns then fall in different banks.
  static constexpr int kDqRowBytes = kD * 4 + 32;
  static constexpr int kDqBytes = kQueryTile * kDqRowBytes;
  static constexpr int kVectorBytes = kStages * kQueryTile * int(2 * sizeof(float) + sizeof(int64_t));
  static constexpr int kLanes = 32;  // of the vector warp and the dQ warp
  // The resident tiles loaded; per stage: loaded (the copier thread's expected bytes and
  // the vector warp's lanes), free; the dQ tile: written, added.
  static constexpr int kBarriers = 1 + 2 * kStages + 2;
  static constexpr int kBytes = kTileBytesAll + kDqBytes + kVectorBytes + kBarriers * 8;

  uint32_t qs, dos, dq, barriers;
  unsigned char* dq_rows;  // the dQ tile, generic
  unsigned char* vectors;  // per stage: positions, then LSE, then delta

  __device__ explicit QueryStream(unsigned char* start)
      : qs(mma::shared_address(start)),
        dos(qs + kStages * kTileBytes),
        dq(qs + kTileBytesAll),
        barriers(dq + kDqBytes + kVectorBytes),
        dq_rows(start + kTileBytesAll),
        vectors(start + kTileBytesAll + kDqBytes) {}

  __device__ static int stage(int t) { return t % kStages; }
  __device__ static uint32_t parity(int t) { return uint32_t(t / kStages) & 1; }
  __device__ uint32_t q_tile(int t) const { return qs + uint32_t(stage(t) * kTileBytes); }
  __device__ uint32_t do_tile(int t) const { return dos + uint32_t(stage(t) * kTileBytes); }
  __device__ int64_t* positions(int t) const {
    return reinterpret_cast<int64_t*>(vectors) + stage(t) * kQueryTile;
  }
  __device__ float* lse(int t) const {
    return reinterpret_cast<float*>(vectors + kStages * kQueryTile * sizeof(int64_t)) + stage(t) * kQueryTile;
  }
  __device__ float* delta(int t) const { return lse(t) + kStages * kQueryTile; }
  __device__ float* dq_row(int r) const { return reinterpret_cast<float*>(dq_rows + r * kDqRowBytes); }

  __device__ uint32_t resident_loaded() const { return barriers; }
  __device__ uint32_t loaded(int t) const { return barriers + 8u * uint32_t(1 + stage(t)); }
  __device__ uint32_t freed(int t) const { return barriers + 8u * uint32_t(1 + kStages + stage(t)); }
  __device__ uint32_t dq_written() const { return barriers + 8u * uint32_t(1 + 2 * kStages); }
  __device__ uint32_t dq_added() const { return dq_written() + 8u; }

  // One thread, before the block's __syncthreads().
  __device__ void init() const {
    barrier_init(resident_loaded(), 1);
    for (int s = 0; s < kStages; ++s) {
      barrier_init(loaded(s), 1 + kLanes);
      barrier_init(freed(s), kConsumerWarps);
    }
    barrier_init(dq_written(), kConsumerWarps);
    barrier_init(dq_added(), kLanes);
    fence_barrier_init();
  }

  // The copier thread: the Q and dO tiles of steps 0..steps-1 (at(t): where step t's tile
  // lies) of batch b, each stage refilled once the consumers have freed it (the first
  // round passes at once). Then the tail: it waits until every stage is freed before it
  // exits, so that a consumer stuck on a copy ends in this thread's trap (its waits are
  // bounded) instead of a hang.
  template <class At>
  __device__ void produce_tiles(const CUtensorMap* q_map, const CUtensorMap* do_map, int b, int steps,
                                At&& at) const {
    for (int t = 0; t < steps; ++t) {
      wait_or_trap(freed(t), parity(t) ^ 1);
      arrive_expect_bytes(loaded(t), 2 * kTileBytes);
      const QueryTileAt where = at(t);
      load_tile<kQueryTile, kD>(q_tile(t), q_map, loaded(t), where.head, where.row, b);
      load_tile<kQueryTile, kD>(do_tile(t), do_map, loaded(t), where.head, where.row, b);
    }
    for (int t = steps > kStages ? steps - kStages : 0; t < steps; ++t) wait_or_trap(freed(t), parity(t));
  }

  // The vector warp (all its lanes): fill(t, lane) writes lane's rows of step t's
  // positions, LSE and delta, each lane's stores released by its own arrival.
  template <class Fill>
  __device__ void produce_vectors(int steps, int lane, Fill&& fill) const {
    for (int t = 0; t < steps; ++t) {
      wait_or_trap(freed(t), parity(t) ^ 1);
      fill(t, lane);
      arrive(loaded(t));
    }
  }

  // The dQ warp (all its lanes): once step t's dQ tile is written, row r goes to
  // global_row(t, r) (nullptr: a row past the tile); each lane hands the tile back once its
  // copies have read it, and waits for their adds before it exits.
  template <class GlobalRow>
  __device__ void add_dq(int steps, int lane, GlobalRow&& global_row) const {
    for (int t = 0; t < steps; ++t) {
      wait_or_trap(dq_written(), uint32_t(t) & 1);
      for (int r = lane; r < kQueryTile; r += kLanes)
        if (float* dst = global_row(t, r)) reduce_add_bulk(dst, dq + uint32_t(r * kDqRowBytes), kD * 4);
      bulk_commit();
      bulk_wait<true>();
      arrive(dq_added());
    }
    bulk_wait<false>();
  }

  // A consumer thread's side (the frees and hand-overs by all lanes of a warp together).
  __device__ void wait_loaded(int t) const { wait(loaded(t), parity(t)); }
  __device__ void free_stage(int t) const { arrive_for_warp(freed(t)); }
  // Before writing step t's dQ tile: step t - 1's has been read.
  __device__ void wait_dq_free(int t) const { wait(dq_added(), (uint32_t(t) & 1) ^ 1); }
  // Step t's dQ tile written by this warp: made visible to the bulk copies, handed over.
  __device__ void hand_dq_over() const {
    wgmma::fence_shared_for_async();
    arrive_for_warp(dq_written());
  }
};

// The block of a kernel that owns a key tile and walks the query tiles that see it
// through the stream: a producer warpgroup, then consumer warpgroups of 64 keys each
// (wgmma's M), the producer's registers handed to the consumers' accumulators
// (setmaxnreg); how many, the query tile, the stages and the registers: tile_sizes.hpp.
// Shared memory from the aligned start: the block's K and V tiles, two dS tiles (one
// step's, while the other step's may still be read), the stream.
struct KeyBlock {
  static constexpr int kConsumers = kSm90OnepassConsumers;
  static constexpr int kKeys = 64 * kConsumers;
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int kStages = kSm90OnepassStages, kQueryTile = kSm90OnepassQueryTile;
  static constexpr int kProducerRegisters = kSm90OnepassProducerRegisters;
  static constexpr int kConsumerRegisters = kSm90OnepassConsumerRegisters;
  template <int kD>
  using Stream = QueryStream<kStages, kQueryTile, kD, 4 * kConsumers>;
  // A 16-bit [kKeys, kD] tile the block keeps resident (its K, its V).
  template <int kD>
  static constexpr int kKeyTileBytes = kKeys* kD * 2;
  // One step's dS: [kQueryTile, kKeys], 16-bit.
  static constexpr int kDsTileBytes = kQueryTile * kKeys * 2;
  // Byte offsets from the aligned start.
  template <int kD>
  static constexpr int kDsOffset = 2 * kKeyTileBytes<kD>;
  template <int kD>
  static constexpr int kStreamOffset = kDsOffset<kD> + 2 * kDsTileBytes;
  template <int kD>
  static constexpr size_t kSharedBytes = wgmma::kAlignmentSlack +
                                         size_t(kStreamOffset<kD> + Stream<kD>::kBytes);

  // Host: that the kernel's registers at launch cover the split (check_register_split).
  template <auto kKernel>
  static void check_registers(const char* what) {
    check_register_split<kKernel>(kConsumers, kProducerRegisters, kConsumerRegisters, what);
  }

  // Sets the stream's barriers, then splits the block: the producer warpgroup gives its
  // registers up; its first thread runs load_resident() (copies that complete on
  // qs.resident_loaded()) and streams the Q and dO tiles of batch b, its second warp the
  // vectors (fill), its third adds the dQ tiles to global memory (global_row); the
  // producer's threads get true, and exit. The consumers claim the registers and get false.
  template <int kD, class LoadResident, class At, class Fill, class GlobalRow>
  __device__ static bool produce(const Stream<kD>& qs, const CUtensorMap* q_map, const CUtensorMap* do_map,
                                 int b, int steps, LoadResident&& load_resident, At&& at, Fill&& fill,
                                 GlobalRow&& global_row) {
    if (!is_producer<kProducerRegisters, kConsumerRegisters>([&] { qs.init(); })) return false;
    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    if (threadIdx.x == 0) {
      load_resident();
      qs.produce_tiles(q_map, do_map, b, steps, at);
    } else if (warp == 1) {
      qs.produce_vectors(steps, lane, fill);
    } else if (warp == 2) {
      qs.add_dq(steps, lane, global_row);
    }
    return true;
  }
};
static_assert(register_split_fits(KeyBlock::kConsumers, KeyBlock::kProducerRegisters,
                                  KeyBlock::kConsumerRegisters),
              "the consumers claim no more registers than the producer gives up");

}  // namespace minictx::cuda::tma
