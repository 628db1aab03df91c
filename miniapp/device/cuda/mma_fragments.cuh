#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

// Warp-level tensor-core primitives of sm_80 and later (PTX ISA, "Warp-level matrix
// multiply-accumulate"): mma.sync m16n8k16 with fp32 accumulators, ldmatrix loads of its
// fragments from shared memory, and cp.async copies into shared memory. Fragment layouts
// (lane = 4·group + thread_in_group):
//   A 16×16 (row-major)  a0: (group, 2t..2t+1)  a1: (group+8, 2t..)  a2: (group, 2t+8..)  a3: (group+8,
//   2t+8..) B 16×8  (col-major)  b0: (k 2t..2t+1, n group)                   b1: (k 2t+8.., n group) C 16×8
//   (fp32)       c0, c1: (group, 2t..2t+1)                    c2, c3: (group+8, 2t..2t+1)
namespace minictx::cuda::mma {

template <bool kBf16>
struct Operand;
template <>
struct Operand<true> {
  using type = __nv_bfloat16;
};
template <>
struct Operand<false> {
  using type = __half;
};

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Element offset of (row, col) in a shared tile of kCols 16-bit columns whose 16-byte
// chunks are XOR-swizzled by row: the 8 rows an ldmatrix reads at one column then sit in
// 8 different groups of 4 banks (rows of 32 columns pair up two to a 128-byte line).
template <int kCols>
__device__ __forceinline__ int swizzled(int row, int col) {
  static_assert(kCols == 32 || kCols % 64 == 0, "rows of 4 or a multiple of 8 chunks of 16 bytes");
  const int chunk = col >> 3, mix = kCols == 32 ? (row >> 1) & 3 : row & 7;
  return row * kCols + ((chunk ^ mix) << 3) + (col & 7);
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// c += a · b for one 16×8×16 tile.
template <bool kBf16>
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// c_lo += a · b (first n-tile), c_hi += a · b (second): the two n-tiles one ldmatrix_x4
// of B fragments (b_rows, b_cols) holds.
template <bool kBf16>
__device__ __forceinline__ void mma_16816_x2(float (&c_lo)[4], float (&c_hi)[4], const uint32_t (&a)[4],
                                             const uint32_t (&b)[4]) {
  mma_16816<kBf16>(c_lo, a, b[0], b[1]);
  mma_16816<kBf16>(c_hi, a, b[2], b[3]);
}

// Two fp32 values rounded to the operand type, `lo` in the low half (the lower column).
template <bool kBf16>
__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  uint32_t bits;
  if constexpr (kBf16) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    memcpy(&bits, &v, sizeof bits);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    memcpy(&bits, &v, sizeof bits);
  }
  return bits;
}

// The A fragment of columns 16k..16k+15 of a C-layout row block held as n-tiles of 8
// columns: how P = softmax(S) feeds the next product without leaving registers.
template <bool kBf16>
__device__ __forceinline__ void a_from_c(uint32_t (&a)[4], const float (&lo)[4], const float (&hi)[4]) {
  a[0] = pack<kBf16>(lo[0], lo[1]);
  a[1] = pack<kBf16>(lo[2], lo[3]);
  a[2] = pack<kBf16>(hi[0], hi[1]);
  a[3] = pack<kBf16>(hi[2], hi[3]);
}

// The values of C-layout n-tile n ((c0, c1) in row group, (c2, c3) in row group + 8),
// rounded, into A fragment n / 2, of which n-tile n is the low (n even) or high half.
template <bool kBf16>
__device__ __forceinline__ void c_into_a(uint32_t (&a)[4], int n, const float (&c)[4]) {
  const int half = (n & 1) * 2;
  a[half] = pack<kBf16>(c[0], c[1]);
  a[half + 1] = pack<kBf16>(c[2], c[3]);
}

// 16 bytes global → shared, bypassing L1; with `valid` false the destination is zeroed
// and nothing is read.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
// 4 or 8 bytes global → shared (per-row vectors: positions, LSE, delta), in the same
// commit groups as the tiles, so no warp stalls on them; with `valid` false the
// destination is zeroed.
template <int kBytes>
__device__ __forceinline__ void cp_async_small(uint32_t dst, const void* src, bool valid) {
  static_assert(kBytes == 4 || kBytes == 8, "cp.async.ca copies 4, 8 or 16 bytes");
  const int bytes = valid ? kBytes : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(kBytes),
               "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most `kPending` committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// One step of a two-stage pipeline: waits until this stage's copies have landed, then one
// barrier, which also says that every warp is done with the other stage (read in the step
// before), and only then starts refilling that stage; the copies run under this step's work.
template <class StartNext>
__device__ __forceinline__ void pipeline_step(bool has_next, StartNext&& start_next) {
  cp_async_wait<0>();
  __syncthreads();
  if (has_next) {
    start_next();
    cp_async_commit();
  }
}

// Starts copying rows [0, kRows) × kCols of a global matrix (row stride in elements) into
// a swizzled shared tile; rows from `valid` on are zero.
template <int kRows, int kCols, int kThreads, class T>
__device__ __forceinline__ void load_tile_async(T* tile, const T* rows, int64_t stride, int valid) {
  constexpr int kChunks = kCols / 8;
  static_assert((kRows * kChunks) % kThreads == 0, "every thread copies the same number of chunks");
#pragma unroll
  for (int i = 0; i < kRows * kChunks / kThreads; ++i) {
    const int idx = i * kThreads + int(threadIdx.x), r = idx / kChunks, c = (idx % kChunks) * 8;
    const bool ok = r < valid;
    cp_async_16(shared_address(tile + swizzled<kCols>(r, c)), rows + (ok ? int64_t(r) * stride + c : 0), ok);
  }
}

// Starts copying the positions of a key tile's `valid` keys into `kpos` (kBc of them);
// the rest are zero and not read.
template <int kBc, int kThreads>
__device__ __forceinline__ void load_key_positions(int64_t* kpos, const int64_t* k_pos, int valid) {
  for (int j = int(threadIdx.x); j < kBc; j += kThreads)
    cp_async_small<8>(shared_address(kpos + j), k_pos + (j < valid ? j : 0), j < valid);
}

// Starts copying key tile t (rows t·kBc on, at most kBc, of a K and a V matrix with row
// stride `stride`) and its key positions into stage t & 1 of the shared K, V and position
// buffers; rows past k_len are zero and their positions are not read.
template <int kBc, int kD, int kThreads, class T>
__device__ __forceinline__ void load_kv_stage(T* ks, T* vs, int64_t* kpos, const T* k_rows, const T* v_rows,
                                              int64_t stride, const int64_t* k_pos, int64_t k_len, int t) {
  const int64_t j0 = int64_t(t) * kBc;
  const int valid = k_len - j0 < kBc ? int(k_len - j0) : kBc;
  load_tile_async<kBc, kD, kThreads>(ks + (t & 1) * kBc * kD, k_rows + j0 * stride, stride, valid);
  load_tile_async<kBc, kD, kThreads>(vs + (t & 1) * kBc * kD, v_rows + j0 * stride, stride, valid);
  load_key_positions<kBc, kThreads>(kpos + (t & 1) * kBc, k_pos + j0, valid);
}

// ldmatrix addresses. Each lane names one 8-element row of one of the four 8×8 matrices
// (lanes 8m..8m+7: matrix m).
//   a_rows: the A fragment of rows row0..row0+15, columns col0..col0+15, stored as rows.
template <int kCols>
__device__ __forceinline__ uint32_t a_rows(const void* tile, int row0, int col0, int lane) {
  const auto* t = static_cast<const uint16_t*>(tile);
  return shared_address(t +
                        swizzled<kCols>(row0 + (lane & 7) + ((lane >> 3) & 1) * 8, col0 + (lane >> 4) * 8));
}
//   b_rows: B fragments of two n-tiles (n0..n0+15) × k (k0..k0+15), stored as n rows of k.
template <int kCols>
__device__ __forceinline__ uint32_t b_rows(const void* tile, int n0, int k0, int lane) {
  const auto* t = static_cast<const uint16_t*>(tile);
  return shared_address(t + swizzled<kCols>(n0 + (lane & 7) + (lane >> 4) * 8, k0 + ((lane >> 3) & 1) * 8));
}
//   b_cols (with .trans): B fragments of k0..k0+15 × two n-tiles n0..n0+15, stored as k
//   rows of n.
template <int kCols>
__device__ __forceinline__ uint32_t b_cols(const void* tile, int k0, int n0, int lane) {
  const auto* t = static_cast<const uint16_t*>(tile);
  return shared_address(t + swizzled<kCols>(k0 + (lane & 7) + ((lane >> 3) & 1) * 8, n0 + (lane >> 4) * 8));
}
//   a_cols (with .trans): the A fragment of m0..m0+15 × k0..k0+15, stored as k rows of m.
template <int kCols>
__device__ __forceinline__ uint32_t a_cols(const void* tile, int m0, int k0, int lane) {
  const auto* t = static_cast<const uint16_t*>(tile);
  return shared_address(t + swizzled<kCols>(k0 + (lane & 7) + (lane >> 4) * 8, m0 + ((lane >> 3) & 1) * 8));
}

}  // namespace minictx::cuda::mma
