#include "device/cuda/elementwise_kernels.hpp"
#include "device/cuda/precision.cuh"
#include "device/cuda/swiglu_math.cuh"

namespace minictx::cuda {
namespace {

constexpr int kBlock = 256;

unsigned blocks(int64_t n) {
  const int64_t b = (n + kBlock - 1) / kBlock;
  if (b < 1) return 1;  // an empty launch is a CUDA error; the loop then does nothing
  return unsigned(b < 65535 * 16 ? b : 65535 * 16);  // grid-stride loops cover the rest
}

#define GRID_STRIDE(i, n)                                                   \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

__global__ void add_kernel(float* y, const float* __restrict__ x, int64_t n) {
  GRID_STRIDE(i, n) y[i] += x[i];
}

__device__ double block_sum(double x) {
  __shared__ double part[kBlock / 32];
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = x;
  __syncthreads();
  double total = 0;
  if (threadIdx.x == 0)
    for (int w = 0; w < kBlock / 32; ++w) total += part[w];
  __syncthreads();
  return total;  // valid in thread 0
}

__global__ void dot_kernel(In a, In b, int64_t n, double* result) {
  double acc = 0;
  GRID_STRIDE(i, n) acc += double(a[i]) * double(b[i]);
  acc = block_sum(acc);
  if (threadIdx.x == 0) atomicAdd(result, acc);
}

// One block per row.
__global__ void rmsnorm_fwd_kernel(In x, In g, double eps, int64_t cols, Out y, float* rstd) {
  __shared__ float inv_s;
  const int64_t base = int64_t(blockIdx.x) * cols;
  double ss = 0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float v = x[base + j];
    ss += double(v) * v;
  }
  ss = block_sum(ss);
  if (threadIdx.x == 0) {
    inv_s = float(1.0 / sqrt(ss / double(cols) + eps));
    rstd[blockIdx.x] = inv_s;
  }
  __syncthreads();
  const float inv = inv_s;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) y.set(base + j, x[base + j] * inv * g[j]);
}

// dx_j += r (g_j dy_j − x_j r² · mean_k(x_k g_k dy_k)), one block per row.
__global__ void rmsnorm_bwd_dx_kernel(In x, In g, const float* __restrict__ rstd, In dy, int64_t cols,
                                      Out dx) {
  __shared__ float c_s;
  const int64_t base = int64_t(blockIdx.x) * cols;
  const float r = rstd[blockIdx.x];
  double dot = 0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) dot += double(x[base + j]) * g[j] * dy[base + j];
  dot = block_sum(dot);
  if (threadIdx.x == 0) c_s = float(dot / double(cols)) * r * r;
  __syncthreads();
  const float c = c_s;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    dx.set(base + j, dx[base + j] + r * (g[j] * dy[base + j] - x[base + j] * c));
}

// The gain gradient sums over rows: one thread per column keeps the reads coalesced.
__global__ void rmsnorm_bwd_dg_kernel(In x, const float* __restrict__ rstd, In dy, int64_t rows, int64_t cols,
                                      Out dg) {
  GRID_STRIDE(j, cols) {
    double acc = 0;
    for (int64_t row = 0; row < rows; ++row)
      acc += double(dy[row * cols + j]) * x[row * cols + j] * rstd[row];
    dg.set(j, dg[j] + float(acc));
  }
}

// One thread per (row, rotation pair), all heads.
__global__ void rope_kernel(Out x, int64_t rows, int64_t width, int heads, const int64_t* __restrict__ pos,
                            int64_t seq, double theta, double sign) {
  const int d = int(width / heads), half = d / 2;
  GRID_STRIDE(idx, rows * half) {
    const int64_t row = idx / half;
    const int i = int(idx % half);
    const double angle = sign * double(pos[row % seq]) * pow(theta, -2.0 * i / d);
    const float c = float(cos(angle)), s = float(sin(angle));
    for (int h = 0; h < heads; ++h) {
      const int64_t at = row * width + int64_t(h) * d + i;
      const float a = x[at], b = x[at + half];
      x.set(at, a * c - b * s);
      x.set(at + half, a * s + b * c);
    }
  }
}

__global__ void swiglu_fwd_kernel(In a, In u, Out m, int64_t n) {
  GRID_STRIDE(i, n) m.set(i, swiglu(a[i], u[i]));
}

__global__ void swiglu_bwd_kernel(In a, In u, In dm, Out da, Out du, int64_t n) {
  GRID_STRIDE(i, n) {
    float dai = 0, dui = 0;
    swiglu_grad(a[i], u[i], dm[i], dai, dui);
    du.set(i, dui);
    da.set(i, dai);
  }
}

__global__ void to_bf16_kernel(const float* __restrict__ x, __nv_bfloat16* out, int64_t n) {
  GRID_STRIDE(i, n) out[i] = __float2bfloat16(x[i]);
}
__global__ void to_f16_kernel(const float* __restrict__ x, __half* out, int64_t n) {
  GRID_STRIDE(i, n) out[i] = __float2half(x[i]);
}

__global__ void convert_rows_kernel(void* dst, Precision dt, int64_t dst_ld, const void* src, Precision st,
                                    int64_t src_ld, int64_t rows, int64_t cols) {
  GRID_STRIDE(i, rows * cols) {
    const int64_t r = i / cols, c = i % cols;
    store_element(dst, dt, r * dst_ld + c, load_element(src, st, r * src_ld + c));
  }
}
__global__ void fill_typed_kernel(void* p, Precision t, int64_t n, float value) {
  GRID_STRIDE(i, n) store_element(p, t, i, value);
}
__global__ void add_typed_kernel(void* y, Precision yt, const void* x, Precision xt, int64_t n) {
  GRID_STRIDE(i, n) store_element(y, yt, i, load_element(y, yt, i) + load_element(x, xt, i));
}

}  // namespace

void convert_rows(void* dst, Precision dst_type, int64_t dst_ld, const void* src, Precision src_type,
                  int64_t src_ld, int64_t rows, int64_t cols, cudaStream_t s) {
  convert_rows_kernel<<<blocks(rows * cols), kBlock, 0, s>>>(dst, dst_type, dst_ld, src, src_type, src_ld,
                                                             rows, cols);
}
void fill_typed(void* p, Precision type, int64_t n, float value, cudaStream_t s) {
  fill_typed_kernel<<<blocks(n), kBlock, 0, s>>>(p, type, n, value);
}
void add_typed(void* y, Precision y_type, const void* x, Precision x_type, int64_t n, cudaStream_t s) {
  add_typed_kernel<<<blocks(n), kBlock, 0, s>>>(y, y_type, x, x_type, n);
}

void add(float* y, const float* x, int64_t n, cudaStream_t s) {
  add_kernel<<<blocks(n), kBlock, 0, s>>>(y, x, n);
}
void dot(In a, In b, int64_t n, double* result, cudaStream_t s) {
  const unsigned grid = blocks(n) < 1024 ? blocks(n) : 1024;
  dot_kernel<<<grid, kBlock, 0, s>>>(a, b, n, result);
}
void rmsnorm_fwd(In x, In g, double eps, int64_t rows, int64_t cols, Out y, float* rstd, cudaStream_t s) {
  if (rows > 0) rmsnorm_fwd_kernel<<<unsigned(rows), kBlock, 0, s>>>(x, g, eps, cols, y, rstd);
}
void rmsnorm_bwd_dx(In x, In g, const float* rstd, In dy, int64_t rows, int64_t cols, Out dx,
                    cudaStream_t s) {
  if (rows > 0) rmsnorm_bwd_dx_kernel<<<unsigned(rows), kBlock, 0, s>>>(x, g, rstd, dy, cols, dx);
}
void rmsnorm_bwd(In x, In g, const float* rstd, In dy, int64_t rows, int64_t cols, Out dx, Out dg,
                 cudaStream_t s) {
  if (rows == 0) return;
  rmsnorm_bwd_dx(x, g, rstd, dy, rows, cols, dx, s);
  rmsnorm_bwd_dg_kernel<<<blocks(cols), kBlock, 0, s>>>(x, rstd, dy, rows, cols, dg);
}
void rope(Out x, int64_t rows, int64_t width, int heads, const int64_t* positions, int64_t seq, double theta,
          bool inverse, cudaStream_t s) {
  const int64_t n = rows * (width / heads / 2);
  if (n > 0)
    rope_kernel<<<blocks(n), kBlock, 0, s>>>(x, rows, width, heads, positions, seq, theta,
                                             inverse ? -1.0 : 1.0);
}
void swiglu_fwd(In a, In u, Out m, int64_t n, cudaStream_t s) {
  swiglu_fwd_kernel<<<blocks(n), kBlock, 0, s>>>(a, u, m, n);
}
void swiglu_bwd(In a, In u, In dm, Out da, Out du, int64_t n, cudaStream_t s) {
  swiglu_bwd_kernel<<<blocks(n), kBlock, 0, s>>>(a, u, dm, da, du, n);
}
void to_half(const float* x, void* out, int64_t n, Precision p, cudaStream_t s) {
  if (p == Precision::bf16)
    to_bf16_kernel<<<blocks(n), kBlock, 0, s>>>(x, static_cast<__nv_bfloat16*>(out), n);
  else
    to_f16_kernel<<<blocks(n), kBlock, 0, s>>>(x, static_cast<__half*>(out), n);
}

}  // namespace minictx::cuda
