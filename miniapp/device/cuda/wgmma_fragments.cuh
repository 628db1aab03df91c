#pragma once
#include <cstddef>
#include <cstdint>

#include "device/cuda/mma_fragments.cuh"

// Warpgroup-level tensor-core primitives of sm_90a (PTX ISA, "Asynchronous Warpgroup
// Level Matrix Multiply-Accumulate"): wgmma.mma_async m64nNk16 with fp32 accumulators, its
// shared-memory matrix descriptors, and the fences and waits around it. A warpgroup is 4
// consecutive warps; warp w of it holds rows 16w..16w+15 of the 64-row accumulator in the
// layout of mma.sync's m16n8 C fragment, one n-tile of 8 columns after another
// (device/cuda/flash_rows.cuh), and an A operand in registers in the layout of
// mma.sync's m16n8k16 A fragment.
//
// Shared tiles are stored as the 128-byte-swizzle layout the descriptors name: a tile of
// R rows × C 16-bit columns is C / 64 slabs of R rows × 128 bytes, slab after slab, and
// the 16-byte chunk c of row r sits at chunk c ^ (r % 8) of its row; each group of 8 rows
// (1024 bytes) starts 1024-byte aligned. Such a tile is
//   - K-major (rows = M or N, columns = the contracted dim): one k-step of 16 columns is
//     32 bytes into a slab, 8-row groups 1024 bytes apart (stride byte offset); the
//     leading byte offset is not used;
//   - MN-major for B (rows = the contracted dim, columns = N, transposed): 8-row groups
//     along K 1024 bytes apart (stride byte offset), slabs of 64 columns along N one
//     slab apart (leading byte offset).
namespace minictx::cuda::wgmma {

// Byte offset of 16-bit element (row, col) in a swizzled tile of kRows rows.
template <int kRows>
__host__ __device__ constexpr int swizzled_offset(int row, int col) {
  return (col / 64) * kRows * 128 + row * 128 + ((((col % 64) / 8) ^ (row % 8)) << 4) + (col % 8) * 2;
}

// Where the descriptors of k-step kc of a tile of kRows rows start, and their byte
// offsets: K-major (16 columns of depth) and MN-major (16 rows of depth).
constexpr int kGroupBytes = 1024;  // stride byte offset: 8 rows of 128 bytes
constexpr size_t kAlignmentSlack = 1024;
template <int kRows>
__host__ __device__ constexpr int k_major_start(int kc) {
  return swizzled_offset<kRows>(0, kc * 16);
}
template <int kRows>
__host__ __device__ constexpr int mn_major_start(int kc) {
  return swizzled_offset<kRows>(kc * 16, 0);
}
template <int kRows>
__host__ __device__ constexpr int mn_major_leading_bytes() {
  return kRows * 128;  // one slab of 64 columns
}

// The address the hardware reads element (row, k) of a K-major k-step at, and element
// (k, n) of an MN-major one, from the descriptor's start and offsets: the canonical
// 128-byte-swizzle layouts (CUTLASS, cute/arch/mma_sm90_desc.hpp), the swizzle XORing
// address bits 4-6 with bits 7-9. The static_asserts below check that the tiles this
// file stores are what the descriptors it builds describe, for every element of every
// k-step of the tile shapes the kernels use.
constexpr int hardware_swizzle(int address) { return address ^ (((address >> 7) & 7) << 4); }
constexpr int k_major_address(int start, int row, int k) {
  return hardware_swizzle(start + (row / 8) * kGroupBytes + (row % 8) * 128 + k * 2);
}
constexpr int mn_major_address(int start, int leading_bytes, int k, int n) {
  return hardware_swizzle(start + (n / 64) * leading_bytes + (k / 8) * kGroupBytes + (k % 8) * 128 +
                          (n % 64) * 2);
}
template <int kRows, int kCols>
constexpr bool descriptors_describe_tiles() {
  for (int kc = 0; kc < kCols / 16; ++kc)
    for (int row = 0; row < kRows; ++row)
      for (int k = 0; k < 16; ++k)
        if (k_major_address(k_major_start<kRows>(kc), row, k) != swizzled_offset<kRows>(row, kc * 16 + k))
          return false;
  for (int kc = 0; kc < kRows / 16; ++kc)
    for (int k = 0; k < 16; ++k)
      for (int n = 0; n < kCols; ++n)
        if (mn_major_address(mn_major_start<kRows>(kc), mn_major_leading_bytes<kRows>(), k, n) !=
            swizzled_offset<kRows>(kc * 16 + k, n))
          return false;
  return true;
}
static_assert(descriptors_describe_tiles<32, 128>() && descriptors_describe_tiles<64, 64>() &&
                  descriptors_describe_tiles<64, 128>() && descriptors_describe_tiles<128, 64>() &&
                  descriptors_describe_tiles<128, 128>(),
              "swizzled tiles and wgmma descriptors disagree");

// Matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address, leading and
// stride byte offsets (each in 16-byte units), 128-byte swizzle (mode 1 in bits 62-63);
// base offset 0, as every 8-row group is 1024-byte aligned.
__device__ __forceinline__ uint64_t descriptor(uint32_t shared_address, uint32_t leading_bytes,
                                               uint32_t stride_bytes) {
  return uint64_t((shared_address & 0x3FFFF) >> 4) | uint64_t((leading_bytes >> 4) & 0x3FFF) << 16 |
         uint64_t((stride_bytes >> 4) & 0x3FFF) << 32 | uint64_t(1) << 62;
}

// Orders this thread's earlier register and shared-memory accesses before the wgmma
// operations that follow (their operands are read asynchronously).
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most kPending committed groups are in flight.
template <int kPending>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Makes shared-memory writes of the generic proxy (cp.async, stores) visible to the async
// proxy that wgmma reads its descriptor operands through.
__device__ __forceinline__ void fence_shared_for_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Keeps the compiler from moving accesses to an accumulator across the asynchronous
// operations that read and write it.
template <int kN>
__device__ __forceinline__ void fence_operands(float (&d)[kN][4]) {
#pragma unroll
  for (int n = 0; n < kN; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[n][e])::"memory");
}
// The same for A fragments in registers.
template <int kN>
__device__ __forceinline__ void fence_operands(uint32_t (&a)[kN][4]) {
#pragma unroll
  for (int n = 0; n < kN; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(a[n][e])::"memory");
}

// d (m64n32, fp32) += A (descriptor) · B (descriptor, K-major; MN-major if kTransB).
#define MINICTX_WGMMA_SS_N32(TYPE)                                                                      \
  asm volatile(                                                                                         \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"                                                      \
      "wgmma.mma_async.sync.aligned.m64n32k16.f32." TYPE "." TYPE                                       \
      " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, 0, " \
      "%19;\n}\n"                                                                                       \
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),       \
        "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),       \
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3])                                      \
      : "l"(a), "l"(b), "r"(1), "n"(int(kTransB)))
template <bool kBf16, bool kTransB>
__device__ __forceinline__ void mma_ss_n32(float (&d)[4][4], uint64_t a, uint64_t b) {
  if constexpr (kBf16)
    MINICTX_WGMMA_SS_N32("bf16");
  else
    MINICTX_WGMMA_SS_N32("f16");
}
#undef MINICTX_WGMMA_SS_N32

// d (m64n64, fp32) += A (descriptor) · B (descriptor, K-major; MN-major if kTransB).
#define MINICTX_WGMMA_SS_N64(TYPE)                                                                        \
  asm volatile(                                                                                           \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                                        \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE                                         \
      " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
      "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, %35;\n}\n"           \
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),         \
        "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),         \
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),         \
        "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),         \
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),         \
        "+f"(d[7][2]), "+f"(d[7][3])                                                                      \
      : "l"(a), "l"(b), "r"(1), "n"(int(kTransB)))
template <bool kBf16, bool kTransB>
__device__ __forceinline__ void mma_ss_n64(float (&d)[8][4], uint64_t a, uint64_t b) {
  if constexpr (kBf16)
    MINICTX_WGMMA_SS_N64("bf16");
  else
    MINICTX_WGMMA_SS_N64("f16");
}
#undef MINICTX_WGMMA_SS_N64

// d (m64n128, fp32) += A (descriptor) · B (descriptor, K-major).
#define MINICTX_WGMMA_SS_N128(TYPE)                                                                          \
  asm volatile(                                                                                              \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                           \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE                                           \
      " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "    \
      "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, " \
      "%41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, " \
      "%61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"                                                        \
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),            \
        "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),            \
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),            \
        "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),            \
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),            \
        "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),            \
        "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]),          \
        "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),      \
        "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]),      \
        "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),      \
        "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])                                       \
      : "l"(a), "l"(b), "r"(1))
template <bool kBf16>
__device__ __forceinline__ void mma_ss_n128(float (&d)[16][4], uint64_t a, uint64_t b) {
  if constexpr (kBf16)
    MINICTX_WGMMA_SS_N128("bf16");
  else
    MINICTX_WGMMA_SS_N128("f16");
}
#undef MINICTX_WGMMA_SS_N128

// d (m64n64, fp32) += A (registers, the mma.sync A fragment of the warp's 16 rows) ·
// B (descriptor, MN-major: transposed).
#define MINICTX_WGMMA_RS_N64(TYPE)                                                                          \
  asm volatile(                                                                                             \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                                          \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE                                           \
      " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "   \
      "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n" \
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),           \
        "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),           \
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),           \
        "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),           \
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),           \
        "+f"(d[7][2]), "+f"(d[7][3])                                                                        \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))
template <bool kBf16>
__device__ __forceinline__ void mma_rs_n64(float (&d)[8][4], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (kBf16)
    MINICTX_WGMMA_RS_N64("bf16");
  else
    MINICTX_WGMMA_RS_N64("f16");
}
#undef MINICTX_WGMMA_RS_N64

// d (m64n128, fp32) += A (registers, the mma.sync A fragment of the warp's 16 rows) ·
// B (descriptor, MN-major: transposed).
#define MINICTX_WGMMA_RS_N128(TYPE)                                                                          \
  asm volatile(                                                                                              \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                                           \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE                                           \
      " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "    \
      "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, " \
      "%41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, " \
      "%61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"                                          \
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),            \
        "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),            \
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),            \
        "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),            \
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),            \
        "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),            \
        "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]),          \
        "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),      \
        "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]),      \
        "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),      \
        "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])                                       \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))
template <bool kBf16>
__device__ __forceinline__ void mma_rs_n128(float (&d)[16][4], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (kBf16)
    MINICTX_WGMMA_RS_N128("bf16");
  else
    MINICTX_WGMMA_RS_N128("f16");
}
#undef MINICTX_WGMMA_RS_N128

// The products above by N; kTransB: B's descriptor is MN-major (N = 32 or 64).
template <int kN, bool kBf16, bool kTransB = false>
__device__ __forceinline__ void mma_ss(float (&d)[kN / 8][4], uint64_t a, uint64_t b) {
  static_assert(kN == 32 || kN == 64 || kN == 128, "m64nNk16 with N = 32, 64 or 128");
  static_assert(!kTransB || kN != 128, "an MN-major B with N = 32 or 64");
  if constexpr (kN == 32)
    mma_ss_n32<kBf16, kTransB>(d, a, b);
  else if constexpr (kN == 64)
    mma_ss_n64<kBf16, kTransB>(d, a, b);
  else
    mma_ss_n128<kBf16>(d, a, b);
}
template <int kN, bool kBf16>
__device__ __forceinline__ void mma_rs(float (&d)[kN / 8][4], const uint32_t (&a)[4], uint64_t b) {
  static_assert(kN == 64 || kN == 128, "m64nNk16 with N = 64 or 128");
  if constexpr (kN == 64)
    mma_rs_n64<kBf16>(d, a, b);
  else
    mma_rs_n128<kBf16>(d, a, b);
}

// Descriptors of a swizzled tile of kRows rows: the K-major operand of k-step kc (16
// columns), and the MN-major B operand of k-step kc (16 rows) whose N runs along the columns.
template <int kRows>
__device__ __forceinline__ uint64_t k_major(uint32_t tile, int kc) {
  return descriptor(tile + uint32_t(k_major_start<kRows>(kc)), 16, kGroupBytes);
}
template <int kRows>
__device__ __forceinline__ uint64_t mn_major(uint32_t tile, int kc) {
  return descriptor(tile + uint32_t(mn_major_start<kRows>(kc)), mn_major_leading_bytes<kRows>(), kGroupBytes);
}

// One step of a two-stage cp.async pipeline feeding wgmma (mma::pipeline_step's order):
// this stage's copies have landed and are made visible to the async proxy, one barrier
// (every warp is done with the other stage, its products waited for), then the other
// stage is refilled under this step's work.
template <class StartNext>
__device__ __forceinline__ void pipeline_step(bool has_next, StartNext&& start_next) {
  mma::cp_async_wait<0>();
  fence_shared_for_async();
  __syncthreads();
  if (has_next) {
    start_next();
    mma::cp_async_commit();
  }
}

// The first 1024-byte boundary of dynamic shared memory, where the swizzled tiles start:
// a kernel asks for kAlignmentSlack bytes more than its tiles.
__device__ __forceinline__ unsigned char* aligned_tiles(unsigned char* shared) {
  return shared + ((1024u - (mma::shared_address(shared) & 1023u)) & 1023u);
}

// Starts copying rows [0, kRows) × kCols of a global matrix (row stride in elements) into
// the swizzled tile at shared address `tile`; rows from `valid` on are zero.
template <int kRows, int kCols, int kThreads, class T>
__device__ __forceinline__ void load_tile_async(uint32_t tile, const T* rows, int64_t stride, int valid) {
  constexpr int kChunks = kCols / 8;
  static_assert((kRows * kChunks) % kThreads == 0, "every thread copies the same number of chunks");
#pragma unroll
  for (int i = 0; i < kRows * kChunks / kThreads; ++i) {
    const int idx = i * kThreads + int(threadIdx.x), r = idx / kChunks, c = (idx % kChunks) * 8;
    const bool ok = r < valid;
    mma::cp_async_16(tile + uint32_t(swizzled_offset<kRows>(r, c)), rows + (ok ? int64_t(r) * stride + c : 0),
                     ok);
  }
}

// Starts copying key tile t (rows t·kBc on, at most kBc, of a K and a V matrix with row
// stride `stride`) and its key positions into stage t & 1 of the swizzled K and V tiles
// (kBc · kD 16-bit elements a stage) and of the position buffer; rows past k_len are zero.
template <int kBc, int kD, int kThreads, class T>
__device__ __forceinline__ void load_kv_stage(uint32_t ks, uint32_t vs, int64_t* kpos, const T* k_rows,
                                              const T* v_rows, int64_t stride, const int64_t* k_pos,
                                              int64_t k_len, int t) {
  constexpr uint32_t kStageBytes = kBc * kD * 2;
  const int64_t j0 = int64_t(t) * kBc;
  const int valid = k_len - j0 < kBc ? int(k_len - j0) : kBc;
  load_tile_async<kBc, kD, kThreads>(ks + (t & 1) * kStageBytes, k_rows + j0 * stride, stride, valid);
  load_tile_async<kBc, kD, kThreads>(vs + (t & 1) * kStageBytes, v_rows + j0 * stride, stride, valid);
  mma::load_key_positions<kBc, kThreads>(kpos + (t & 1) * kBc, k_pos + j0, valid);
}

}  // namespace minictx::cuda::wgmma
