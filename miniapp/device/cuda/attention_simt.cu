#include <cmath>

#include "device/cuda/attention_common.cuh"
#include "device/cuda/attention_simt.hpp"
#include "device/cuda/precision.cuh"
#include "device/cuda/tile_sizes.hpp"

namespace minictx::cuda {
namespace {

using namespace attn;

// SIMT kernels: a warp owns whole query (or key) rows, a lane owns one key (or query) of
// the tile for the scores and kMaxHeadDim/32 columns of the accumulators (the tiles:
// tile_sizes.hpp). Loops over the per-thread accumulator arrays are unrolled so that they
// stay in registers (ptxas -v: no stack frame, 96 registers at most, sm_90).
constexpr int kThreads = kSimtThreads;
constexpr int kWarps = kThreads / kWarp;
constexpr int kCols = kMaxHeadDim / kWarp;

constexpr int kFwdRows = kSimtFwdRows;     // query rows per warp
constexpr int kFwdBq = kWarps * kFwdRows;  // 16 queries per block
constexpr int kFwdBk = kWarp;              // 32 keys per tile
constexpr int kDkvKeys = kSimtDkvRows;     // key rows per warp
constexpr int kDkvBk = kWarps * kDkvKeys;  // 8 keys per block
constexpr int kDkvBq = kWarp;              // 32 queries per tile
constexpr int kDqRows = kSimtDqRows;       // query rows per warp
constexpr int kDqBq = kWarps * kDqRows;    // 8 queries per block
constexpr int kDqBk = kWarp;               // 32 keys per tile

__device__ __forceinline__ float warp_max(float x) {
  for (int o = kWarp / 2; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(kFull, x, o));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
  for (int o = kWarp / 2; o > 0; o /= 2) x += __shfl_xor_sync(kFull, x, o);
  return x;
}

// acc[t] (column lane + 32t) += Σ_j w_j · rows[j][column] for the n rows of a shared
// tile with row stride `stride`; lane j holds w_j.
__device__ __forceinline__ void accumulate_rows(float (&acc)[kCols], float w, const float* rows, int stride,
                                                int n, int d, int lane) {
  for (int j = 0; j < n; ++j) {
    const float wj = __shfl_sync(kFull, w, j);
#pragma unroll
    for (int t = 0; t < kCols; ++t) {
      const int c = lane + t * kWarp;
      if (c < d) acc[t] += wj * rows[j * stride + c];
    }
  }
}

// Key tiles from this one on are masked for every query up to last_query_pos.
__device__ __forceinline__ bool keys_exhausted(const AttnArgs& a, int64_t first_key_pos,
                                               int64_t last_query_pos) {
  return first_key_pos >= a.real_len || (a.causal && first_key_pos > last_query_pos);
}
// Element (b, row, head, 0) of a [B, rows, heads, D] tensor.
__device__ __forceinline__ int64_t at(int b, int64_t rows, int64_t row, int heads, int head, int d) {
  return ((int64_t(b) * rows + row) * heads + head) * d;
}

// Loads `cap` key rows (k and v of kv head g, rows first_row…) into shared tiles with
// the given row strides, rounded to the run's precision; rows past `valid` are zero.
__device__ __forceinline__ void load_kv_tile(const AttnArgs& a, const float* __restrict__ k,
                                             const float* __restrict__ v, int b, int g, int64_t first_row,
                                             int cap, int valid, float* ks, int ks_stride, float* vs,
                                             int vs_stride) {
  const int d = a.head_dim;
  for (int idx = threadIdx.x; idx < cap * d; idx += blockDim.x) {
    const int j = idx / d, c = idx % d;
    const int64_t off = at(b, a.k_rows, first_row + j, a.kv_heads, g, d) + c;
    ks[j * ks_stride + c] = j < valid ? round_to(k[off], a.precision) : 0.0f;
    vs[j * vs_stride + c] = j < valid ? round_to(v[off], a.precision) : 0.0f;
  }
}

__global__ void __launch_bounds__(kThreads)
    fwd_kernel(AttnArgs a, const float* __restrict__ q, const float* __restrict__ k,
               const float* __restrict__ v, float* o, float* lse) {
  __shared__ float qs[kFwdBq][kMaxHeadDim];
  __shared__ float ks[kFwdBk][kMaxHeadDim + 1];  // +1: lanes read different rows
  __shared__ float vs[kFwdBk][kMaxHeadDim];
  const int d = a.head_dim;
  const int b = blockIdx.y / a.heads, h = blockIdx.y % a.heads, g = h / (a.heads / a.kv_heads);
  const int64_t i0 = int64_t(blockIdx.x) * kFwdBq;
  const int tq = tile_rows(a.q_len - i0, kFwdBq);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;

  for (int idx = threadIdx.x; idx < kFwdBq * d; idx += kThreads) {
    const int r = idx / d, c = idx % d;
    qs[r][c] =
        r < tq ? round_to(q[at(b, a.q_rows, a.q_begin + i0 + r, a.heads, h, d) + c], a.precision) : 0.0f;
  }
  float m[kFwdRows], l[kFwdRows], acc[kFwdRows][kCols];
  int64_t qpos[kFwdRows];
#pragma unroll
  for (int rr = 0; rr < kFwdRows; ++rr) {
    const int r = warp * kFwdRows + rr;
    m[rr] = -INFINITY;
    l[rr] = 0.0f;
    qpos[rr] = r < tq ? a.q_pos[i0 + r] : 0;
#pragma unroll
    for (int t = 0; t < kCols; ++t) acc[rr][t] = 0.0f;
  }
  const int64_t last_q = a.q_pos[i0 + tq - 1];

  for (int64_t j0 = 0; j0 < a.k_len; j0 += kFwdBk) {
    if (keys_exhausted(a, a.k_pos[j0], last_q)) break;
    const int tk = tile_rows(a.k_len - j0, kFwdBk);
    __syncthreads();  // the previous tile is consumed (and q is loaded)
    load_kv_tile(a, k, v, b, g, a.k_begin + j0, kFwdBk, tk, &ks[0][0], kMaxHeadDim + 1, &vs[0][0],
                 kMaxHeadDim);
    __syncthreads();
    const int64_t kpos = lane < tk ? a.k_pos[j0 + lane] : a.real_len;
#pragma unroll
    for (int rr = 0; rr < kFwdRows; ++rr) {
      const int r = warp * kFwdRows + rr;
      if (r >= tq) continue;
      float s = -INFINITY;
      if (lane < tk && visible(a, kpos, qpos[rr])) {
        float dot = 0.0f;
        for (int c = 0; c < d; ++c) dot += qs[r][c] * ks[lane][c];
        s = dot * a.scale;
      }
      const float new_max = fmaxf(m[rr], warp_max(s));
      if (new_max == -INFINITY) continue;  // nothing visible yet for this row
      const float p = s == -INFINITY ? 0.0f : expf(s - new_max);
      const float rescale = m[rr] == -INFINITY ? 0.0f : expf(m[rr] - new_max);
      l[rr] = l[rr] * rescale + warp_sum(p);
      m[rr] = new_max;
      const float pv = round_to(p, a.precision);
#pragma unroll
      for (int t = 0; t < kCols; ++t) acc[rr][t] *= rescale;
      accumulate_rows(acc[rr], pv, &vs[0][0], kMaxHeadDim, tk, d, lane);
    }
  }

// Merge this block's (o_b, lse_b) into the running (o, lse).
#pragma unroll
  for (int rr = 0; rr < kFwdRows; ++rr) {
    const int r = warp * kFwdRows + rr;
    if (r >= tq || l[rr] == 0.0f) continue;
    const int64_t row = a.q_begin + i0 + r;
    float* orow = o + at(b, a.o_rows, row, a.heads, h, d);
    float* lrow = lse + (int64_t(b) * a.heads + h) * a.vec_len + row;
    const float lse_b = m[rr] + logf(l[rr]);
    const float inv = 1.0f / l[rr];
    const float old = *lrow;
    __syncwarp();  // every lane has read the old lse before lane 0 replaces it
    const float w = merge_weight(old, lse_b);
#pragma unroll
    for (int t = 0; t < kCols; ++t) {
      const int c = lane + t * kWarp;
      if (c < d) orow[c] = merged(orow[c], acc[rr][t] * inv, old, w);
    }
    if (lane == 0) *lrow = merged_lse(old, lse_b);
  }
}

// dK, dV of kDkvBk keys of one kv head: loops every query head of its group, so each
// dk/dv row is written by one block only (no atomics).
__global__ void __launch_bounds__(kThreads)
    bwd_dkdv_kernel(AttnArgs a, const float* __restrict__ q, const float* __restrict__ k,
                    const float* __restrict__ v, const float* __restrict__ dout,
                    const float* __restrict__ lse, const float* __restrict__ delta, float* dk, float* dv) {
  __shared__ float ks[kDkvBk][kMaxHeadDim];
  __shared__ float vs[kDkvBk][kMaxHeadDim];
  __shared__ float qs[kDkvBq][kMaxHeadDim + 1];
  __shared__ float dos[kDkvBq][kMaxHeadDim + 1];
  __shared__ float lse_s[kDkvBq], delta_s[kDkvBq];
  const int d = a.head_dim;
  const int b = blockIdx.y / a.kv_heads, g = blockIdx.y % a.kv_heads;
  const int group = a.heads / a.kv_heads;
  const int64_t j0 = int64_t(blockIdx.x) * kDkvBk;
  const int tk = tile_rows(a.k_len - j0, kDkvBk);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t first_k = a.k_pos[j0];
  if (first_k >= a.real_len) return;  // padding keys only: no gradient

  load_kv_tile(a, k, v, b, g, a.k_begin + j0, kDkvBk, tk, &ks[0][0], kMaxHeadDim, &vs[0][0], kMaxHeadDim);
  int64_t kpos[kDkvKeys];
  float dk_acc[kDkvKeys][kCols], dv_acc[kDkvKeys][kCols];
#pragma unroll
  for (int t = 0; t < kDkvKeys; ++t) {
    const int kk = warp * kDkvKeys + t;
    kpos[t] = kk < tk ? a.k_pos[j0 + kk] : a.real_len;
#pragma unroll
    for (int c = 0; c < kCols; ++c) dk_acc[t][c] = dv_acc[t][c] = 0.0f;
  }

  for (int h = g * group; h < (g + 1) * group; ++h) {
    const int64_t vec = (int64_t(b) * a.heads + h) * a.vec_len + a.q_begin;
    for (int64_t i0 = 0; i0 < a.q_len; i0 += kDkvBq) {
      const int tq = tile_rows(a.q_len - i0, kDkvBq);
      if (a.causal && a.q_pos[i0 + tq - 1] < first_k) continue;  // every key is in these queries' future
      __syncthreads();
      for (int idx = threadIdx.x; idx < kDkvBq * d; idx += kThreads) {
        const int i = idx / d, c = idx % d;
        const int64_t off = at(b, a.o_rows, a.q_begin + i0 + i, a.heads, h, d) + c;
        const int64_t qoff = at(b, a.q_rows, a.q_begin + i0 + i, a.heads, h, d) + c;
        qs[i][c] = i < tq ? round_to(q[qoff], a.precision) : 0.0f;
        dos[i][c] = i < tq ? round_to(dout[off], a.precision) : 0.0f;
      }
      if (threadIdx.x < kDkvBq) {
        const int i = threadIdx.x;
        lse_s[i] = i < tq ? lse[vec + i0 + i] : -INFINITY;
        delta_s[i] = i < tq ? delta[vec + i0 + i] : 0.0f;
      }
      __syncthreads();
      const int64_t qpos = lane < tq ? a.q_pos[i0 + lane] : 0;
#pragma unroll
      for (int t = 0; t < kDkvKeys; ++t) {
        const int kk = warp * kDkvKeys + t;
        if (kk >= tk) continue;
        float p = 0.0f, ds = 0.0f;
        if (lane < tq && lse_s[lane] != -INFINITY && visible(a, kpos[t], qpos)) {
          float s = 0.0f, dp = 0.0f;
          for (int c = 0; c < d; ++c) {
            s += qs[lane][c] * ks[kk][c];
            dp += dos[lane][c] * vs[kk][c];
          }
          p = expf(s * a.scale - lse_s[lane]);
          ds = p * (dp - delta_s[lane]);
        }
        const float pr = round_to(p, a.precision), dsr = round_to(ds, a.precision);
        accumulate_rows(dv_acc[t], pr, &dos[0][0], kMaxHeadDim + 1, tq, d, lane);
        accumulate_rows(dk_acc[t], dsr, &qs[0][0], kMaxHeadDim + 1, tq, d, lane);
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kDkvKeys; ++t) {
    const int kk = warp * kDkvKeys + t;
    if (kk >= tk) continue;
    const int64_t off = at(b, a.dk_rows, a.k_begin + j0 + kk, a.kv_heads, g, d);
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int col = lane + c * kWarp;
      if (col < d) {
        dk[off + col] += a.scale * dk_acc[t][c];
        dv[off + col] += dv_acc[t][c];
      }
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    bwd_dq_kernel(AttnArgs a, const float* __restrict__ q, const float* __restrict__ k,
                  const float* __restrict__ v, const float* __restrict__ dout, const float* __restrict__ lse,
                  const float* __restrict__ delta, float* dq) {
  __shared__ float qs[kDqBq][kMaxHeadDim];
  __shared__ float dos[kDqBq][kMaxHeadDim];
  __shared__ float ks[kDqBk][kMaxHeadDim + 1];
  __shared__ float vs[kDqBk][kMaxHeadDim + 1];
  const int d = a.head_dim;
  const int b = blockIdx.y / a.heads, h = blockIdx.y % a.heads, g = h / (a.heads / a.kv_heads);
  const int64_t i0 = int64_t(blockIdx.x) * kDqBq;
  const int tq = tile_rows(a.q_len - i0, kDqBq);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t vec = (int64_t(b) * a.heads + h) * a.vec_len + a.q_begin;

  for (int idx = threadIdx.x; idx < kDqBq * d; idx += kThreads) {
    const int r = idx / d, c = idx % d;
    qs[r][c] =
        r < tq ? round_to(q[at(b, a.q_rows, a.q_begin + i0 + r, a.heads, h, d) + c], a.precision) : 0.0f;
    dos[r][c] =
        r < tq ? round_to(dout[at(b, a.o_rows, a.q_begin + i0 + r, a.heads, h, d) + c], a.precision) : 0.0f;
  }
  float row_lse[kDqRows], row_delta[kDqRows], acc[kDqRows][kCols];
  int64_t qpos[kDqRows];
#pragma unroll
  for (int rr = 0; rr < kDqRows; ++rr) {
    const int r = warp * kDqRows + rr;
    row_lse[rr] = r < tq ? lse[vec + i0 + r] : -INFINITY;
    row_delta[rr] = r < tq ? delta[vec + i0 + r] : 0.0f;
    qpos[rr] = r < tq ? a.q_pos[i0 + r] : 0;
#pragma unroll
    for (int t = 0; t < kCols; ++t) acc[rr][t] = 0.0f;
  }
  const int64_t last_q = a.q_pos[i0 + tq - 1];

  for (int64_t j0 = 0; j0 < a.k_len; j0 += kDqBk) {
    if (keys_exhausted(a, a.k_pos[j0], last_q)) break;
    const int tk = tile_rows(a.k_len - j0, kDqBk);
    __syncthreads();
    load_kv_tile(a, k, v, b, g, a.k_begin + j0, kDqBk, tk, &ks[0][0], kMaxHeadDim + 1, &vs[0][0],
                 kMaxHeadDim + 1);
    __syncthreads();
    const int64_t kpos = lane < tk ? a.k_pos[j0 + lane] : a.real_len;
#pragma unroll
    for (int rr = 0; rr < kDqRows; ++rr) {
      const int r = warp * kDqRows + rr;
      if (r >= tq || row_lse[rr] == -INFINITY) continue;
      float ds = 0.0f;
      if (lane < tk && visible(a, kpos, qpos[rr])) {
        float s = 0.0f, dp = 0.0f;
        for (int c = 0; c < d; ++c) {
          s += qs[r][c] * ks[lane][c];
          dp += dos[r][c] * vs[lane][c];
        }
        ds = expf(s * a.scale - row_lse[rr]) * (dp - row_delta[rr]);
      }
      const float dsr = round_to(ds, a.precision);
      accumulate_rows(acc[rr], dsr, &ks[0][0], kMaxHeadDim + 1, tk, d, lane);
    }
  }
#pragma unroll
  for (int rr = 0; rr < kDqRows; ++rr) {
    const int r = warp * kDqRows + rr;
    if (r >= tq) continue;
    float* out = dq + at(b, a.o_rows, a.q_begin + i0 + r, a.heads, h, d);
#pragma unroll
    for (int t = 0; t < kCols; ++t) {
      const int c = lane + t * kWarp;
      if (c < d) out[c] += a.scale * acc[rr][t];
    }
  }
}

// One warp per (b, h, row).
__global__ void delta_kernel(int batch, int heads, int d, int64_t rows, In o, In dout, float* delta) {
  const int64_t w = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (w >= int64_t(batch) * heads * rows) return;
  const int64_t i = w % rows;
  const int h = int((w / rows) % heads), b = int(w / (rows * heads));
  const int64_t off = at(b, rows, i, heads, h, d);
  float acc = 0.0f;
  for (int c = lane; c < d; c += kWarp) acc += o[off + c] * dout[off + c];
  acc = warp_sum(acc);
  if (lane == 0) delta[w] = acc;
}

__global__ void lse_merge_kernel(int batch, int heads, int d, int64_t rows, float* o, float* lse,
                                 const float* __restrict__ o_b, const float* __restrict__ lse_b) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= int64_t(batch) * heads * rows) return;
  const int64_t i = idx % rows;
  const int h = int((idx / rows) % heads), b = int(idx / (rows * heads));
  const int64_t off = at(b, rows, i, heads, h, d);
  const float lb = lse_b[idx], la = lse[idx];
  if (lb == -INFINITY) return;
  const float w = merge_weight(la, lb);
  for (int c = 0; c < d; ++c) o[off + c] = merged(o[off + c], o_b[off + c], la, w);
  lse[idx] = merged_lse(la, lb);
}

unsigned blocks(int64_t n, int per_block) { return unsigned((n + per_block - 1) / per_block); }

}  // namespace

void attn_fwd(const AttnArgs& a, const float* q, const float* k, const float* v, float* o, float* lse,
              cudaStream_t stream) {
  const dim3 grid(blocks(a.q_len, kFwdBq), unsigned(a.batch * a.heads));
  fwd_kernel<<<grid, kThreads, 0, stream>>>(a, q, k, v, o, lse);
}

void attn_bwd(const AttnArgs& a, const float* q, const float* k, const float* v, const float* dout,
              const float* lse, const float* delta, float* dq, float* dk, float* dv, cudaStream_t stream) {
  const dim3 kv_grid(blocks(a.k_len, kDkvBk), unsigned(a.batch * a.kv_heads));
  bwd_dkdv_kernel<<<kv_grid, kThreads, 0, stream>>>(a, q, k, v, dout, lse, delta, dk, dv);
  const dim3 q_grid(blocks(a.q_len, kDqBq), unsigned(a.batch * a.heads));
  bwd_dq_kernel<<<q_grid, kThreads, 0, stream>>>(a, q, k, v, dout, lse, delta, dq);
}

void attn_bwd_delta(int batch, int heads, int head_dim, int64_t rows, In o, In dout, float* delta,
                    cudaStream_t stream) {
  const int64_t n = int64_t(batch) * heads * rows;
  delta_kernel<<<blocks(n, kWarps), kThreads, 0, stream>>>(batch, heads, head_dim, rows, o, dout, delta);
}

void lse_merge(int batch, int heads, int head_dim, int64_t rows, float* o, float* lse, const float* o_b,
               const float* lse_b, cudaStream_t stream) {
  const int64_t n = int64_t(batch) * heads * rows;
  lse_merge_kernel<<<blocks(n, 256), 256, 0, stream>>>(batch, heads, head_dim, rows, o, lse, o_b, lse_b);
}

}  // namespace minictx::cuda
