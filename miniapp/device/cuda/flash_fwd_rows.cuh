#pragma once
#include <cmath>
#include <cstdint>

#include "device/cuda/attention_common.cuh"

// The row work of a forward flash kernel, on scores and outputs held in the accumulator
// layout that mma.sync m16n8 and wgmma m64nN share: per warp, m-tiles of 16 rows, each an
// array of n-tiles of 8 columns, of which a thread holds (row group, columns 2t, 2t + 1) in
// elements 0, 1 and (row group + 8, same columns) in elements 2, 3 (group = lane / 4,
// t = lane % 4). A thread's rows are numbered rr = 2·m-tile + (0: group, 1: group + 8).
// Both forward kernels (flash_fwd.cu on mma.sync, flash_fwd_wgmma.cu on wgmma) call these.
namespace minictx::cuda::attn {

// What a forward block of kBr queries owns: batch b, query head h and its KV head g, the
// query tile's first row i0 and its rows tq, and the keys [0, keys) it can see (0: none,
// the block has nothing to do). Causal query tiles late in the sequence have the most
// key tiles: they are launched first.
struct FwdTile {
  int b, h, g, tq;
  int64_t i0, keys, first_query;
};
template <int kBr>
__device__ __forceinline__ FwdTile fwd_tile(const AttnArgs& a) {
  FwdTile f;
  f.b = int(blockIdx.y) / a.heads;
  f.h = int(blockIdx.y) % a.heads;
  f.g = f.h / (a.heads / a.kv_heads);
  f.i0 = int64_t(gridDim.x - 1 - blockIdx.x) * kBr;
  f.tq = tile_rows(a.q_len - f.i0, kBr);
  f.keys = visible_keys_end(a, a.q_pos[f.i0 + f.tq - 1]);
  f.first_query = a.q_pos[f.i0];
  return f;
}

// The query-tile row of a thread's row rr, for warps that own kMt m-tiles each.
template <int kMt>
__device__ __forceinline__ int row_of(int warp, int group, int rr) {
  return (warp * kMt + rr / 2) * 16 + group + (rr % 2) * 8;
}

// Masks the scores of one key tile: keys past the tile's `valid` rows, padding keys and
// (causally) keys after the query. kp: the tile's key positions; qpos: the positions of
// the thread's rows.
template <int kMt, int kBc>
__device__ __forceinline__ void mask_scores(float (&s)[kMt][kBc / 8][4], const AttnArgs& a, const int64_t* kp,
                                            const int64_t (&qpos)[2 * kMt], int valid, int tig) {
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
    for (int n = 0; n < kBc / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = n * 8 + 2 * tig + (e & 1);
        if (j >= valid || !visible(a, kp[j], qpos[2 * mt + (e >> 1)])) s[mt][n][e] = -INFINITY;
      }
}

// One key tile's step of the online softmax: each row's running maximum and sum are
// updated (the quad of lanes sharing a row reduces by shuffles), the scores become
// exp2(s·scale·log2(e) − max) in place, and the output accumulators are rescaled.
template <int kMt, int kBc, int kD>
__device__ __forceinline__ void online_softmax(float (&s)[kMt][kBc / 8][4], float (&acc)[kMt][kD / 8][4],
                                               float (&row_max)[2 * kMt], float (&row_sum)[2 * kMt],
                                               float scale_log2) {
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int rr = 2 * mt + half;
      float mx = row_max[rr];
#pragma unroll
      for (int n = 0; n < kBc / 8; ++n) mx = fmaxf(mx, fmaxf(s[mt][n][2 * half], s[mt][n][2 * half + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 2));
      const float rescale = row_max[rr] == -INFINITY ? 1.0f : exp2f((row_max[rr] - mx) * scale_log2);
      row_max[rr] = mx;
      const float offset = mx == -INFINITY ? 0.0f : mx * scale_log2;
      float sum = 0.0f;
#pragma unroll
      for (int n = 0; n < kBc / 8; ++n)
#pragma unroll
        for (int e = 2 * half; e < 2 * half + 2; ++e) {
          s[mt][n][e] = exp2f(fmaf(s[mt][n][e], scale_log2, -offset));
          sum += s[mt][n][e];
        }
      row_sum[rr] = row_sum[rr] * rescale + sum;
#pragma unroll
      for (int n = 0; n < kD / 8; ++n) {
        acc[mt][n][2 * half] *= rescale;
        acc[mt][n][2 * half + 1] *= rescale;
      }
    }
  }
}

// Merges the block's (acc / l, m·scale + ln l) into the running (o, lse) of rows
// i0 + row of head h, batch b, with the overflow-free weights every attention kernel
// uses: every lane of a quad reads the old lse before one writes. tq: the query tile's rows.
template <int kMt, int kD>
__device__ __forceinline__ void merge_rows(const float (&acc)[kMt][kD / 8][4], const float (&row_max)[2 * kMt],
                                           const float (&row_sum)[2 * kMt], const AttnArgs& a, float* o,
                                           float* lse, int b, int h, int64_t i0, int tq, int warp, int group,
                                           int tig) {
  constexpr int kRows = 2 * kMt;
  float total[kRows], old_lse[kRows];
#pragma unroll
  for (int rr = 0; rr < kRows; ++rr) {
    total[rr] = row_sum[rr];
    total[rr] += __shfl_xor_sync(kFull, total[rr], 1);
    total[rr] += __shfl_xor_sync(kFull, total[rr], 2);
    const int r = row_of<kMt>(warp, group, rr);
    const bool active = r < tq && total[rr] > 0.0f;
    old_lse[rr] = active ? lse[(int64_t(b) * a.heads + h) * a.vec_len + a.q_begin + i0 + r] : 0.0f;
  }
  __syncwarp();
#pragma unroll
  for (int rr = 0; rr < kRows; ++rr) {
    const int r = row_of<kMt>(warp, group, rr);
    if (r >= tq || total[rr] <= 0.0f) continue;
    const float lse_b = row_max[rr] * a.scale + logf(total[rr]);
    const float inv = 1.0f / total[rr], prev = old_lse[rr];
    const float w = merge_weight(prev, lse_b);
    float* orow = o + ((int64_t(b) * a.o_rows + a.q_begin + i0 + r) * a.heads + h) * kD;
    const int mt = rr / 2, half = rr % 2;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      auto* cell = reinterpret_cast<float2*>(orow + n * 8 + 2 * tig);
      const float2 ob{acc[mt][n][2 * half] * inv, acc[mt][n][2 * half + 1] * inv};
      if (prev == -INFINITY) {  // an empty row takes the block's and is not read
        *cell = ob;
      } else {
        const float2 cur = *cell;
        *cell = float2{merged(cur.x, ob.x, prev, w), merged(cur.y, ob.y, prev, w)};
      }
    }
    if (tig == 0) lse[(int64_t(b) * a.heads + h) * a.vec_len + a.q_begin + i0 + r] = merged_lse(prev, lse_b);
  }
}

}  // namespace minictx::cuda::attn
