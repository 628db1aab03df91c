#include <algorithm>
#include <type_traits>

#include "device/cuda/cuda_footprint.hpp"
#include "device/cuda/precision.cuh"
#include "device/cuda/swiglu_math.cuh"
#include "device/cuda/tuned_layer_kernels.hpp"

namespace minictx::cuda {
namespace {

// The gain gradient's first stage: a block is 32 lanes across a tile of columns (each
// lane 16 bytes of a row: 8 bf16/fp16 or 4 fp32 values) by 8 row groups, over a chunk of
// rows. 256 rows per chunk at least and 256 chunks at most: llama-7b's 16k rows × 4096
// columns make 16 tiles × 64 chunks = 1,024 blocks, where one thread per column made 16.
constexpr int kLanes = 32;
constexpr int kRowGroups = 8;
constexpr int64_t kMinChunkRows = 256;
constexpr int kThreads = 256;

__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float widen(__half v) { return __half2float(v); }

// Elements of one type, read 16 bytes at a time where the row allows.
template <class T>
struct Typed {
  static constexpr int kVector = 16 / int(sizeof(T));
  const T* p;
  __device__ float operator[](int64_t i) const { return widen(p[i]); }
  __device__ void load(int64_t i, float (&out)[kVector]) const {
    const uint4 raw = __ldg(reinterpret_cast<const uint4*>(p + i));
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int k = 0; k < kVector; ++k) out[k] = widen(e[k]);
  }
};
// x and dy of different dtypes: element by element, the type read at run time.
struct Mixed {
  static constexpr int kVector = 4;
  In in;
  __device__ float operator[](int64_t i) const { return in[i]; }
};

template <class R>
__global__ void __launch_bounds__(kThreads)
    rmsnorm_dgamma_partial_kernel(R x, const float* __restrict__ rstd, R dy, int64_t rows, int64_t cols,
                                  int64_t chunk_rows, bool whole_vectors, float* __restrict__ partials) {
  constexpr int V = R::kVector, kTile = kLanes * V;
  // [row group][k · 32 + lane]: column lane·V + k, so that the lanes' writes miss each
  // other's banks.
  __shared__ float part[kRowGroups][kTile];
  const int64_t col0 = int64_t(blockIdx.x) * kTile + int64_t(threadIdx.x) * V;
  const int64_t row_begin = int64_t(blockIdx.y) * chunk_rows;
  const int64_t row_end = min(rows, row_begin + chunk_rows);
  float acc[V] = {};
  if constexpr (!std::is_same_v<R, Mixed>) {
    if (whole_vectors && col0 < cols) {
      for (int64_t r = row_begin + threadIdx.y; r < row_end; r += kRowGroups) {
        float xv[V], dv[V];
        x.load(r * cols + col0, xv);
        dy.load(r * cols + col0, dv);
        const float s = rstd[r];
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] += dv[k] * xv[k] * s;
      }
    }
  }
  if (!whole_vectors || std::is_same_v<R, Mixed>)
    for (int64_t r = row_begin + threadIdx.y; r < row_end; r += kRowGroups) {
      const float s = rstd[r];
#pragma unroll
      for (int k = 0; k < V; ++k)
        if (col0 + k < cols) acc[k] += dy[r * cols + col0 + k] * x[r * cols + col0 + k] * s;
    }
#pragma unroll
  for (int k = 0; k < V; ++k) part[threadIdx.y][k * kLanes + threadIdx.x] = acc[k];
  __syncthreads();
  // Each column's row groups summed in order by one thread.
  for (int c = int(threadIdx.y) * kLanes + int(threadIdx.x); c < kTile; c += kThreads) {
    const int64_t col = int64_t(blockIdx.x) * kTile + c;
    if (col >= cols) continue;
    float sum = 0;
#pragma unroll
    for (int g = 0; g < kRowGroups; ++g) sum += part[g][(c % V) * kLanes + c / V];
    partials[int64_t(blockIdx.y) * cols + col] = sum;
  }
}

// The second stage: each column's chunks in order, in fp64, added to dg.
__global__ void rmsnorm_dgamma_sum_kernel(const float* __restrict__ partials, int64_t chunks, int64_t cols,
                                          Out dg) {
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < cols;
       j += int64_t(gridDim.x) * blockDim.x) {
    double acc = 0;
    for (int64_t c = 0; c < chunks; ++c) acc += partials[c * cols + j];
    dg.set(j, dg[j] + float(acc));
  }
}

template <class R>
void launch_dgamma(R x, const float* rstd, R dy, int64_t rows, int64_t cols, bool whole_vectors,
                   float* partials, cudaStream_t s) {
  const int64_t chunks = rmsnorm_dgamma_chunks(rows), chunk_rows = (rows + chunks - 1) / chunks;
  const int64_t tile = kLanes * R::kVector;
  const dim3 grid(unsigned((cols + tile - 1) / tile), unsigned(chunks)), block(kLanes, kRowGroups);
  rmsnorm_dgamma_partial_kernel<R>
      <<<grid, block, 0, s>>>(x, rstd, dy, rows, cols, chunk_rows, whole_vectors, partials);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// One thread per (position, rotation pair).
__global__ void rope_table_kernel(float2* table, const int64_t* __restrict__ positions, int64_t seq,
                                  int head_dim, double theta) {
  const int half = head_dim / 2;
  for (int64_t at = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; at < seq * half;
       at += int64_t(gridDim.x) * blockDim.x) {
    const int i = int(at % half);
    const double angle = double(positions[at / half]) * pow(theta, -2.0 * i / head_dim);
    double sin_a = 0, cos_a = 0;
    sincos(angle, &sin_a, &cos_a);
    table[at] = make_float2(float(cos_a), float(sin_a));
  }
}

// One thread per (row, head, rotation pair): neighbouring threads read neighbouring values.
__global__ void rope_apply_kernel(Out dst, int64_t dst_ld, In src, int64_t src_ld, int64_t rows,
                                  int64_t width, int heads, const float2* __restrict__ table, int64_t seq,
                                  float sign) {
  const int d = int(width / heads), half = d / 2;
  const int64_t per_row = int64_t(heads) * half;
  for (int64_t at = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; at < rows * per_row;
       at += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = at / per_row;
    const int h = int(at % per_row / half), i = int(at % half);
    const float2 cs = table[row % seq * half + i];
    const float sin_a = sign * cs.y;
    const int64_t col = int64_t(h) * d + i, s = row * src_ld + col, e = row * dst_ld + col;
    const float a = src[s], b = src[s + half];
    dst.set(e, a * cs.x - b * sin_a);
    dst.set(e + half, a * sin_a + b * cs.x);
  }
}

// SwiGLU on [a | u] rows: threads across a row's f columns, blocks down the rows, so that
// no thread divides to find its row and every warp reads 32 neighbours of each half.
__global__ void swiglu_fwd_packed_kernel(In gate_up, Out m, int64_t rows, int64_t f) {
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
    for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < f;
         c += int64_t(gridDim.x) * blockDim.x) {
      const int64_t a = r * 2 * f + c;
      m.set(r * f + c, swiglu(gate_up[a], gate_up[a + f]));
    }
}

__global__ void swiglu_bwd_packed_kernel(In gate_up, In dm, Out d_gate_up, int64_t rows, int64_t f) {
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
    for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < f;
         c += int64_t(gridDim.x) * blockDim.x) {
      const int64_t a = r * 2 * f + c;
      float da = 0, du = 0;
      swiglu_grad(gate_up[a], gate_up[a + f], dm[r * f + c], da, du);
      d_gate_up.set(a, da);
      d_gate_up.set(a + f, du);
    }
}

// Blocks across a row (x) and down the rows (y, at most 65,535; the loops cover the rest).
dim3 row_grid(int64_t rows, int64_t f) {
  const int64_t across = std::clamp<int64_t>((f + kThreads - 1) / kThreads, 1, 1024);
  return dim3(unsigned(across), unsigned(std::clamp<int64_t>(rows, 1, 65535)));
}

unsigned grid_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(std::clamp<int64_t>(b, 1, 65535 * 16));  // grid-stride loops cover the rest
}

}  // namespace

int64_t rmsnorm_dgamma_chunks(int64_t rows) {
  return std::clamp<int64_t>((rows + kMinChunkRows - 1) / kMinChunkRows, 1, kDgammaMaxChunks);
}

void rmsnorm_dgamma(In x, const float* rstd, In dy, int64_t rows, int64_t cols, float* partials, Out dg,
                    cudaStream_t s) {
  if (rows == 0 || cols == 0) return;
  const bool aligned = aligned16(x.p) && aligned16(dy.p);
  if (x.t != dy.t) {
    launch_dgamma(Mixed{x}, rstd, Mixed{dy}, rows, cols, false, partials, s);
  } else if (x.t == Precision::bf16) {
    launch_dgamma(Typed<__nv_bfloat16>{static_cast<const __nv_bfloat16*>(x.p)}, rstd,
                  Typed<__nv_bfloat16>{static_cast<const __nv_bfloat16*>(dy.p)}, rows, cols,
                  aligned && cols % 8 == 0, partials, s);
  } else if (x.t == Precision::f16) {
    launch_dgamma(Typed<__half>{static_cast<const __half*>(x.p)}, rstd,
                  Typed<__half>{static_cast<const __half*>(dy.p)}, rows, cols, aligned && cols % 8 == 0,
                  partials, s);
  } else {
    launch_dgamma(Typed<float>{static_cast<const float*>(x.p)}, rstd,
                  Typed<float>{static_cast<const float*>(dy.p)}, rows, cols, aligned && cols % 4 == 0,
                  partials, s);
  }
  rmsnorm_dgamma_sum_kernel<<<grid_for(cols), kThreads, 0, s>>>(partials, rmsnorm_dgamma_chunks(rows), cols,
                                                                dg);
}

void rope_table(float2* table, const int64_t* positions, int64_t seq, int head_dim, double theta,
                cudaStream_t s) {
  const int64_t n = seq * (head_dim / 2);
  if (n > 0) rope_table_kernel<<<grid_for(n), kThreads, 0, s>>>(table, positions, seq, head_dim, theta);
}

void rope_apply(Out dst, int64_t dst_ld, In src, int64_t src_ld, int64_t rows, int64_t width, int heads,
                const float2* table, int64_t seq, bool inverse, cudaStream_t s) {
  const int64_t n = rows * (width / 2);
  if (n > 0)
    rope_apply_kernel<<<grid_for(n), kThreads, 0, s>>>(dst, dst_ld, src, src_ld, rows, width, heads, table,
                                                       seq, inverse ? -1.0f : 1.0f);
}

void swiglu_fwd_packed(In gate_up, Out m, int64_t rows, int64_t f, cudaStream_t s) {
  if (rows > 0 && f > 0) swiglu_fwd_packed_kernel<<<row_grid(rows, f), kThreads, 0, s>>>(gate_up, m, rows, f);
}

void swiglu_bwd_packed(In gate_up, In dm, Out d_gate_up, int64_t rows, int64_t f, cudaStream_t s) {
  if (rows > 0 && f > 0)
    swiglu_bwd_packed_kernel<<<row_grid(rows, f), kThreads, 0, s>>>(gate_up, dm, d_gate_up, rows, f);
}

}  // namespace minictx::cuda
