#pragma once
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/cuda/cuda_check.hpp"
#include "core/error.hpp"

// Hopper's tensor memory accelerator (TMA) and the shared-memory barriers that pace it
// (sm_90a; PTX ISA, "Tensor Copy" and "mbarrier"): a tile of a [batch, rows, heads, D]
// 16-bit tensor copied by one thread's instruction straight into the 128-byte-swizzled
// layout the wgmma descriptors read (wgmma_fragments.cuh), its completion counted in bytes
// on an mbarrier that the reading threads wait on. Rows past the tensor's end arrive as
// zeros.
namespace minictx::cuda::tma {

// The columns one TMA box carries: one 128-byte swizzle span of 16-bit elements, i.e. one
// slab of the swizzled tile.
constexpr int kBoxColumns = 64;

// A tensor map of a [batch, rows, heads, d] 16-bit tensor (row-major, contiguous) whose
// boxes are box_rows rows × 64 columns of one head, swizzled by 128 bytes. Host code:
// the driver's encoder is reached through the runtime, so nothing links libcuda.
inline CUtensorMap tile_map(const void* base, bool bf16, int64_t batch, int64_t rows, int64_t heads,
                            int64_t d, int box_rows) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050  // the versioned query; the plain one is deprecated from then on
    check(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found),
          "cuTensorMapEncodeTiled entry point");
#else
    check(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &found),
          "cuTensorMapEncodeTiled entry point");
#endif
    if (found != cudaDriverEntryPointSuccess || !fn)
      fail(rank_label() + ": the driver has no cuTensorMapEncodeTiled");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  CUtensorMap map;
  const cuuint64_t dims[4] = {cuuint64_t(d), cuuint64_t(heads), cuuint64_t(rows), cuuint64_t(batch)};
  const cuuint64_t strides[3] = {cuuint64_t(d) * 2, cuuint64_t(heads * d) * 2,
                                 cuuint64_t(rows * heads * d) * 2};
  const cuuint32_t box[4] = {kBoxColumns, 1, cuuint32_t(box_rows), 1};
  const cuuint32_t steps[4] = {1, 1, 1, 1};
  const CUresult made = encode(
      &map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
      const_cast<void*>(base), dims, strides, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (made != CUDA_SUCCESS)
    fail(rank_label() + ": cuTensorMapEncodeTiled refused a tile map (CUresult " + std::to_string(int(made)) +
         ")");
  return map;
}

// Shared-memory barriers. A phase completes when `count` threads have arrived and the
// bytes announced by arrive_expect_bytes have landed; waiting names the phase by its
// parity (0, 1, 0, ...). A freshly initialised barrier counts its phase before the first
// as complete, so a producer's first wait for a free stage, on parity 1, passes.
__device__ __forceinline__ void barrier_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes the initialised barriers visible to the async proxy (TMA) as well.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// One arrival for the calling warp, once all its lanes are here (all call it, in step):
// for barriers that count warps. A warp's lanes finish with a stage together (after
// wgmma.wait_group, which is warp-aligned), and 32 arrivals on one barrier word would be
// serialised, 256 a stage where every consumer thread arrived.
__device__ __forceinline__ void arrive_for_warp(uint32_t bar) {
  __syncwarp();
  if ((threadIdx.x & 31) == 0) arrive(bar);
}
// Arrives and announces `bytes` that copies completing on this barrier will bring.
__device__ __forceinline__ void arrive_expect_bytes(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ void wait(uint32_t bar, uint32_t parity) {
  while (!try_wait(bar, parity)) {
  }
}
// The producer's wait, bounded in time: a phase that never completes (a wrong byte count,
// a lost arrival) traps after 10 s on the GPU's clock (%globaltimer, nanoseconds), which
// ends the kernel with an error instead of hanging it; a legitimate wait is one tile's
// work, microseconds (milliseconds under compute-sanitizer), far below the bound. A count
// of tries would not do: how long one try_wait suspends the thread is the hardware's
// choice. Only the producer bounds its waits: a trap in the consumers' loop costs them
// registers around their wgmma (ptxas then serialises it), and a producer that waits for
// every stage to be freed before it exits (its tail) catches a consumer stuck on a copy
// as well.
__device__ __forceinline__ uint64_t gpu_nanoseconds() {
  uint64_t ns;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(ns));
  return ns;
}
__device__ __forceinline__ void wait_or_trap(uint32_t bar, uint32_t parity) {
  constexpr uint64_t kLimitNs = 10'000'000'000ull;
  if (try_wait(bar, parity)) return;
  const uint64_t start = gpu_nanoseconds();
  while (!try_wait(bar, parity))
    if (gpu_nanoseconds() - start > kLimitNs) __trap();
}

// Copies the box at (column, head, row, batch) of `map` to `dst` (1024-byte aligned),
// completing on `bar`.
__device__ __forceinline__ void load_box(uint32_t dst, const CUtensorMap* map, uint32_t bar, int column,
                                         int head, int row, int batch) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, "
      "%6}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(column), "r"(head), "r"(row), "r"(batch)
      : "memory");
}

// Copies rows [row, row + kRows) × all kD columns of head `head`, batch `batch` into the
// swizzled tile at `tile`: one box per 64-column slab (kRows · 128 bytes apart), completing
// on `bar`, which must expect kRows · kD · 2 bytes.
template <int kRows, int kD>
__device__ __forceinline__ void load_tile(uint32_t tile, const CUtensorMap* map, uint32_t bar, int head,
                                          int64_t row, int batch) {
#pragma unroll
  for (int slab = 0; slab < kD / kBoxColumns; ++slab)
    load_box(tile + uint32_t(slab * kRows * 128), map, bar, slab * kBoxColumns, head, int(row), batch);
}

// Adds `bytes` (a multiple of 16) of fp32 values at shared address `src` to those at
// `dst` in global memory (both 16-byte aligned), element by element, as an asynchronous
// bulk copy of this thread's (PTX "cp.reduce.async.bulk", .add.f32): the adds are atomic
// against other blocks'. Committed as a group; waiting for the group's reads frees the
// source.
__device__ __forceinline__ void reduce_add_bulk(float* dst, uint32_t src, uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(dst),
               "r"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// This thread's committed bulk copies have read their sources (kReadOnly) or are complete.
template <bool kReadOnly>
__device__ __forceinline__ void bulk_wait() {
  if constexpr (kReadOnly)
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
  else
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

// Named barrier kId (PTX "bar"; 0 is __syncthreads'), of kThreads threads (a multiple of
// 32) arriving as whole warps: sync waits for the phase to complete, arrive does not. The
// ids are immediates, so ptxas reserves only the barriers used.
template <int kId, int kThreads>
__device__ __forceinline__ void named_sync() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(kId), "n"(kThreads) : "memory");
}
template <int kId, int kThreads>
__device__ __forceinline__ void named_arrive() {
  asm volatile("bar.arrive %0, %1;\n" ::"n"(kId), "n"(kThreads) : "memory");
}

// Two consumer warpgroups' turns at issuing their products (FlashAttention-3's ping-pong):
// while one warpgroup's products run on the tensor cores, the other's softmax runs, so the
// exponentials hide under the products across warpgroups too. Consumer 0 waits for its
// turn on named barrier 1 and hands the turn over on 2, consumer 1 the other way round.
// Consumer 0 takes its first turn unasked and consumer 1 makes no hand-over after its last
// turn, which nobody would take: every barrier phase is one hand-over and one take, and
// none is left half-arrived when the block exits. Both consumers take the same number of
// turns.
struct ConsumerTurns {
  int consumer, turns;
  __device__ __forceinline__ void take(int turn) const {
    if (consumer == 1)
      named_sync<2, 256>();
    else if (turn > 0)
      named_sync<1, 256>();
  }
  __device__ __forceinline__ void hand_over(int turn) const {
    if (consumer == 0)
      named_arrive<2, 256>();
    else if (turn < turns - 1)
      named_arrive<1, 256>();
  }
};

// Whether a block of one producer and `consumers` consumer warpgroups can hand registers
// over with setmaxnreg: both counts multiples of 8 in [24, 256], and the consumers'
// claims covered by what the producer gives up of the block's allocation at launch
// (65536 / threads a thread, rounded down to 8), since a claim waits until it is.
constexpr bool register_split_fits(int consumers, int producer, int consumer) {
  const int threads = 128 * (consumers + 1), at_launch = (65536 / threads) / 8 * 8;
  return producer % 8 == 0 && consumer % 8 == 0 && producer >= 24 && consumer <= 256 &&
         producer * 128 + consumer * 128 * consumers <= at_launch * threads;
}

// Host: the pool a block of kKernel gets at launch is its registers a thread as ptxas
// compiled it (not the launch bounds' ceiling that register_split_fits assumes) times its
// threads; were it short of the split, the consumers' claim would wait forever, so a
// launcher refuses with one error line instead. Read once per kernel.
template <auto kKernel>
void check_register_split(int consumers, int producer, int consumer, const char* what) {
  static const int compiled = [what] {
    cudaFuncAttributes attr{};
    check(cudaFuncGetAttributes(&attr, kKernel), what);
    return attr.numRegs;
  }();
  const int threads = 128 * (consumers + 1), needed = producer * 128 + consumer * 128 * consumers;
  if (compiled * threads < needed)
    fail(rank_label() + ": " + what + ": compiled with " + std::to_string(compiled) +
         " registers a thread, too few for the producer/consumer split (" + std::to_string(needed) +
         " registers a block)");
}

// Hands registers between warpgroups (all threads of a warpgroup execute it): a producer
// that only issues copies gives its registers up to the consumers' accumulators.
template <int kRegisters>
__device__ __forceinline__ void release_registers() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ __forceinline__ void claim_registers() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

// Splits a block of a producer warpgroup (threads 0-127) and consumer warpgroups once the
// first thread has set the barriers (init): the producer gives its registers down to
// kProducer and gets true, the consumers claim kConsumer each and get false.
template <int kProducer, int kConsumer, class Init>
__device__ __forceinline__ bool is_producer(Init&& init) {
  if (threadIdx.x == 0) init();
  __syncthreads();
  if (threadIdx.x >= 128) {
    claim_registers<kConsumer>();
    return false;
  }
  release_registers<kProducer>();
  return true;
}

}  // namespace minictx::cuda::tma
