#pragma once
#include <cmath>
#include <cstdint>

#include "device/cuda/attention_common.cuh"
#include "device/cuda/mma_fragments.cuh"

// The tile and row work of the flash kernels, on scores and outputs held in the
// accumulator layout that mma.sync m16n8 and wgmma m64nN share: per warp, m-tiles of 16
// rows, each an array of n-tiles of 8 columns, of which a thread holds (row group, columns
// 2t, 2t + 1) in elements 0, 1 and (row group + 8, same columns) in elements 2, 3
// (group = lane / 4, t = lane % 4). A thread's rows are numbered rr = 2·m-tile + (0: group,
// 1: group + 8). The kernels on mma.sync (flash_fwd_sm80.cu, flash_bwd_sm80.cu) and on wgmma
// (flash_fwd_sm90.cu, flash_bwd_sm90.cu) call these.
namespace minictx::cuda::attn {

// What a block of kBr queries (forward, dQ pass) owns: batch b, query head h and its KV head g, the
// query tile's first row i0 and its rows tq, and the keys [0, keys) it can see (0: none,
// the block has nothing to do). Causal query tiles late in the sequence have the most
// key tiles: they are launched first.
struct QueryTile {
  int b, h, g, tq;
  int64_t i0, keys, first_query;
};

// Packed documents in the kernels (the *_documents launchers; the kernels' kDocs): the
// span [lo, hi) of the other side's positions each of a thread's rows sees. A query row
// sees the keys of its document up to itself (causally) and before real_len; a key row is
// seen by the queries of its document from itself (causally) on; a padding row sees
// nothing. Positions outside a row's span are masked, so with documents a row is masked
// by its span alone.
template <int kRows>
struct RowSpans {
  int64_t lo[kRows], hi[kRows];
  __device__ bool covers(int rr, int64_t pos) const { return pos >= lo[rr] && pos < hi[rr]; }
  __device__ void set(int rr, DocSpan d) {
    lo[rr] = d.start;
    hi[rr] = d.end;
  }
};
// The document spans after the position arrays (AttnArgs), [batch, len].
__device__ __forceinline__ const DocSpan* query_documents(const AttnArgs& a) {
  return reinterpret_cast<const DocSpan*>(a.q_pos + a.q_len);
}
__device__ __forceinline__ const DocSpan* key_documents(const AttnArgs& a) {
  return reinterpret_cast<const DocSpan*>(a.k_pos + a.k_len);
}
__device__ __forceinline__ DocSpan query_span(const AttnArgs& a, int b, int64_t row) {
  const DocSpan d = query_documents(a)[int64_t(b) * a.q_len + row];
  const int64_t hi = min(d.end, a.real_len);
  return {d.start, a.causal ? min(hi, a.q_pos[row] + 1) : hi};
}
__device__ __forceinline__ DocSpan key_span(const AttnArgs& a, int b, int64_t row) {
  const DocSpan d = key_documents(a)[int64_t(b) * a.k_len + row];
  const int64_t pos = a.k_pos[row];
  if (pos >= a.real_len) return {0, 0};
  return {a.causal ? max(d.start, pos) : d.start, d.end};
}

// The keys [first, end) of the documents of a query tile's first and last rows (i0 and
// i0 + tq - 1, batch b), within the keys [0, keys) it can see otherwise: key tiles outside
// them are skipped whole.
struct KeyRange {
  int64_t first, end;
};
__device__ __forceinline__ KeyRange document_keys(const AttnArgs& a, int b, int64_t i0, int tq,
                                                  int64_t keys) {
  const DocSpan* docs = query_documents(a) + int64_t(b) * a.q_len;
  const int64_t first = lower_bound(a.k_pos, a.k_len, docs[i0].start);
  return {first, max(first, min(keys, lower_bound(a.k_pos, a.k_len, docs[i0 + tq - 1].end)))};
}
// The keys a query tile walks: [0, keys), or with documents (kDocs) those of its queries'
// documents.
template <bool kDocs>
__device__ __forceinline__ KeyRange walked_keys(const AttnArgs& a, const QueryTile& t) {
  if constexpr (kDocs)
    return document_keys(a, t.b, t.i0, t.tq, t.keys);
  else
    return {0, t.keys};
}
template <int kBr>
__device__ __forceinline__ QueryTile query_tile(const AttnArgs& a) {
  QueryTile f;
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
// With documents (kDocs), by the rows' spans instead.
template <int kMt, int kBc, bool kDocs = false>
__device__ __forceinline__ void mask_scores(float (&s)[kMt][kBc / 8][4], const AttnArgs& a, const int64_t* kp,
                                            const int64_t (&qpos)[2 * kMt], int valid, int tig,
                                            const RowSpans<2 * kMt>* spans = nullptr) {
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
    for (int n = 0; n < kBc / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = n * 8 + 2 * tig + (e & 1);
        if constexpr (kDocs) {
          if (j >= valid || !spans->covers(2 * mt + (e >> 1), kp[j])) s[mt][n][e] = -INFINITY;
        } else {
          if (j >= valid || !visible(a, kp[j], qpos[2 * mt + (e >> 1)])) s[mt][n][e] = -INFINITY;
        }
      }
}

// One key tile's step of the online softmax: each row's running maximum and sum are
// updated (the quad of lanes sharing a row reduces by shuffles), the scores become
// exp2(s·scale·log2(e) − max) in place, and rescaled(rr, factor) is told, row by row, the
// factor that brings the output accumulated so far to the row's new maximum.
template <int kMt, int kBc, class Rescaled>
__device__ __forceinline__ void softmax_step(float (&s)[kMt][kBc / 8][4], float (&row_max)[2 * kMt],
                                             float (&row_sum)[2 * kMt], float scale_log2,
                                             Rescaled&& rescaled) {
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
      rescaled(rr, rescale);
    }
  }
}

// Scales a thread's output row rr by `factor`.
template <int kMt, int kD>
__device__ __forceinline__ void rescale_row(float (&acc)[kMt][kD / 8][4], int rr, float factor) {
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) {
    acc[rr / 2][n][2 * (rr % 2)] *= factor;
    acc[rr / 2][n][2 * (rr % 2) + 1] *= factor;
  }
}

// The step with the output rescaled at once, for kernels whose output accumulators are
// idle during the softmax.
template <int kMt, int kBc, int kD>
__device__ __forceinline__ void online_softmax(float (&s)[kMt][kBc / 8][4], float (&acc)[kMt][kD / 8][4],
                                               float (&row_max)[2 * kMt], float (&row_sum)[2 * kMt],
                                               float scale_log2) {
  softmax_step<kMt, kBc>(s, row_max, row_sum, scale_log2,
                         [&](int rr, float factor) { rescale_row<kMt, kD>(acc, rr, factor); });
}

// Merges the block's (acc / l, m·scale + ln l) into the running (o, lse) of rows
// i0 + row of head h, batch b, with the overflow-free weights every attention kernel
// uses: every lane of a quad reads the old lse before one writes. tq: the query tile's rows.
template <int kMt, int kD>
__device__ __forceinline__ void merge_rows(const float (&acc)[kMt][kD / 8][4],
                                           const float (&row_max)[2 * kMt], const float (&row_sum)[2 * kMt],
                                           const AttnArgs& a, float* o, float* lse, int b, int h, int64_t i0,
                                           int tq, int warp, int group, int tig) {
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

// What a dK/dV block of kBc keys owns: batch b, KV head g, the key tile's first row j0
// and its rows tk with the last one's position, and the query tiles of kBr it
// visits: from first_tile on (causally, earlier queries see none of its keys), for each
// of the group's query heads, `steps` in all (0: nothing to do, as for padding keys).
struct KeyTile {
  int b, g, heads_per_kv, tk, steps, first_tile, tiles_per_head;
  int64_t j0, last_key;
  __device__ int head_of(int step) const { return g * heads_per_kv + step / tiles_per_head; }
  __device__ int64_t query_row_of(int step, int kBr) const {
    return int64_t(first_tile + step % tiles_per_head) * kBr;
  }
};
// Key tile `index` of (batch, KV head) `bg` (b · kv_heads + g); the kernels that launch a
// grid of key tiles × (batch, KV head) take (blockIdx.x, blockIdx.y).
template <int kBc, int kBr, bool kDocs = false>
__device__ __forceinline__ KeyTile key_tile(const AttnArgs& a, int index, int bg) {
  KeyTile t;
  t.b = bg / a.kv_heads;
  t.g = bg % a.kv_heads;
  t.heads_per_kv = a.heads / a.kv_heads;
  t.j0 = int64_t(index) * kBc;
  t.tk = tile_rows(a.k_len - t.j0, kBc);
  const int64_t first_key = a.k_pos[t.j0];
  t.steps = 0;
  if (first_key >= a.real_len) return t;
  t.last_key = a.k_pos[t.j0 + t.tk - 1];
  t.first_tile = a.causal ? int(lower_bound(a.q_pos, a.q_len, first_key) / kBr) : 0;
  t.tiles_per_head = int((a.q_len + kBr - 1) / kBr) - t.first_tile;
  if constexpr (kDocs) {
    // With documents, only the query tiles of its first and last keys' documents.
    const DocSpan* docs = key_documents(a) + int64_t(t.b) * a.k_len;
    const int64_t first = lower_bound(a.q_pos, a.q_len, docs[t.j0].start),
                  end = lower_bound(a.q_pos, a.q_len, docs[t.j0 + t.tk - 1].end);
    t.first_tile = max(t.first_tile, int(first / kBr));
    t.tiles_per_head = int((end + kBr - 1) / kBr) - t.first_tile;
  }
  if (t.tiles_per_head > 0) t.steps = t.tiles_per_head * t.heads_per_kv;
  return t;
}
template <int kBc, int kBr, bool kDocs = false>
__device__ __forceinline__ KeyTile key_tile(const AttnArgs& a) {
  return key_tile<kBc, kBr, kDocs>(a, int(blockIdx.x), int(blockIdx.y));
}

// Starts copying a query tile's per-row vectors (LSE, delta, positions) for its `tq` rows
// from `vec` (the (b, h) row of LSE and delta) and query row i0; the rest are zero.
template <int kBr, int kThreads>
__device__ __forceinline__ void load_query_vectors(float* lse_s, float* delta_s, int64_t* qpos_s,
                                                   const float* lse, const float* delta, const int64_t* q_pos,
                                                   int64_t vec, int64_t i0, int tq) {
  for (int i = int(threadIdx.x); i < kBr; i += kThreads) {
    const bool ok = i < tq;
    const int64_t at = ok ? i : 0;
    mma::cp_async_small<4>(mma::shared_address(lse_s + i), lse + vec + at, ok);
    mma::cp_async_small<4>(mma::shared_address(delta_s + i), delta + vec + at, ok);
    mma::cp_async_small<8>(mma::shared_address(qpos_s + i), q_pos + i0 + at, ok);
  }
}

// Pᵀ and dSᵀ of a warp's 16 keys (rows) × kBr queries (columns) from Sᵀ and dPᵀ, rounded to
// the operand type at once as the A fragments of dV += Pᵀ dO and dK += dSᵀ Q (half the
// registers of their fp32 values). ls, dl, qp: the query tile's LSE, delta and positions;
// kpos: the positions of the thread's two keys; `masked`: whether any element may be; with
// documents (kDocs), the keys' spans mask them.
template <int kBr, bool kBf16, bool kDocs = false>
__device__ __forceinline__ void form_pt_dst(const float (&s)[kBr / 8][4], const float (&dp)[kBr / 8][4],
                                            const float* ls, const float* dl, const int64_t* qp,
                                            const int64_t (&kpos)[2], bool masked, int tq, int tig,
                                            float scale_log2, const AttnArgs& a, uint32_t (&pa)[kBr / 16][4],
                                            uint32_t (&dsa)[kBr / 16][4],
                                            const RowSpans<2>* spans = nullptr) {
#pragma unroll
  for (int n = 0; n < kBr / 8; ++n) {
    float p[4], ds[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = n * 8 + 2 * tig + (e & 1);
      // A row that sees no key at all has LSE −∞ and P = 0.
      const float l = ls[i] == -INFINITY ? INFINITY : ls[i] * kLog2e;
      p[e] = exp2f(fmaf(s[n][e], scale_log2, -l));
      if constexpr (kDocs) {
        if (masked && (i >= tq || !spans->covers(e >> 1, qp[i]))) p[e] = 0.0f;
      } else {
        if (masked && (i >= tq || !visible(a, kpos[e >> 1], qp[i]))) p[e] = 0.0f;
      }
      ds[e] = p[e] * (dp[n][e] - dl[i]);
    }
    mma::c_into_a<kBf16>(pa[n / 2], n, p);
    mma::c_into_a<kBf16>(dsa[n / 2], n, ds);
  }
}

// The spans of a thread's two key rows (16·warp + group, + 8 of a tile of tk keys from j0).
__device__ __forceinline__ RowSpans<2> key_row_spans(const AttnArgs& a, int b, int64_t j0, int tk, int warp,
                                                     int group) {
  RowSpans<2> r;
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int j = warp * 16 + group + rr * 8;
    r.set(rr, j < tk ? key_span(a, b, j0 + j) : DocSpan{0, 0});
  }
  return r;
}

// Adds a warp's dK (times the softmax scale) and dV rows, keys 16·warp.. of the tile,
// into dk and dv.
template <int kD>
__device__ __forceinline__ void add_dk_dv(const float (&dk_acc)[kD / 8][4], const float (&dv_acc)[kD / 8][4],
                                          const AttnArgs& a, const KeyTile& t, float* dk, float* dv, int warp,
                                          int group, int tig) {
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int j = warp * 16 + group + rr * 8;
    if (j >= t.tk) continue;
    const int64_t off = ((int64_t(t.b) * a.dk_rows + a.k_begin + t.j0 + j) * a.kv_heads + t.g) * kD;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      auto* dkc = reinterpret_cast<float2*>(dk + off + n * 8 + 2 * tig);
      auto* dvc = reinterpret_cast<float2*>(dv + off + n * 8 + 2 * tig);
      const float2 dk0 = *dkc, dv0 = *dvc;
      *dkc = float2{dk0.x + a.scale * dk_acc[n][2 * rr], dk0.y + a.scale * dk_acc[n][2 * rr + 1]};
      *dvc = float2{dv0.x + dv_acc[n][2 * rr], dv0.y + dv_acc[n][2 * rr + 1]};
    }
  }
}

// The dQ pass's rows of a thread: group and group + 8 of its warp's 16 queries, with their
// positions, LSE·log2(e) (+∞ for a row past the tile or one that sees no key, so P = 0)
// and delta.
struct DqRows {
  int64_t qpos[2];
  float l[2], dl[2];
};
__device__ __forceinline__ DqRows dq_rows(const AttnArgs& a, const QueryTile& f, const float* lse,
                                          const float* delta, int warp, int group) {
  DqRows d;
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int r = warp * 16 + group + rr * 8;
    d.qpos[rr] = a.q_pos[f.i0 + min(r, f.tq - 1)];
    const int64_t vec = (int64_t(f.b) * a.heads + f.h) * a.vec_len + a.q_begin + f.i0 + r;
    const float lr = r < f.tq ? lse[vec] : -INFINITY;
    d.l[rr] = lr == -INFINITY ? INFINITY : lr * kLog2e;
    d.dl[rr] = r < f.tq ? delta[vec] : 0.0f;
  }
  return d;
}

// The spans of the dQ pass's two query rows of a thread (as dq_rows numbers them).
__device__ __forceinline__ RowSpans<2> dq_row_spans(const AttnArgs& a, const QueryTile& f, int warp,
                                                    int group) {
  RowSpans<2> r;
#pragma unroll
  for (int rr = 0; rr < 2; ++rr)
    r.set(rr, query_span(a, f.b, f.i0 + min(warp * 16 + group + rr * 8, f.tq - 1)));
  return r;
}

// dS of a warp's 16 queries × kBc keys from S and dP, rounded at once as the A fragments
// of dQ += dS K. kp: the key tile's positions, `valid` its keys; with documents (kDocs),
// the rows' spans mask them.
template <int kBc, bool kBf16, bool kDocs = false>
__device__ __forceinline__ void form_ds(const float (&s)[kBc / 8][4], const float (&dp)[kBc / 8][4],
                                        const DqRows& rows, const int64_t* kp, int valid, bool masked,
                                        int tig, float scale_log2, const AttnArgs& a,
                                        uint32_t (&dsa)[kBc / 16][4], const RowSpans<2>* spans = nullptr) {
#pragma unroll
  for (int n = 0; n < kBc / 8; ++n) {
    float ds[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int j = n * 8 + 2 * tig + (e & 1);
      float p = exp2f(fmaf(s[n][e], scale_log2, -rows.l[e >> 1]));
      if constexpr (kDocs) {
        if (masked && (j >= valid || !spans->covers(e >> 1, kp[j]))) p = 0.0f;
      } else {
        if (masked && (j >= valid || !visible(a, kp[j], rows.qpos[e >> 1]))) p = 0.0f;
      }
      ds[e] = p * (dp[n][e] - rows.dl[e >> 1]);
    }
    mma::c_into_a<kBf16>(dsa[n / 2], n, ds);
  }
}

// Adds a warp's dQ rows (times the softmax scale), queries 16·warp.. of the tile, into dq.
template <int kD>
__device__ __forceinline__ void add_dq(const float (&dq_acc)[kD / 8][4], const AttnArgs& a,
                                       const QueryTile& f, float* dq, int warp, int group, int tig) {
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int r = warp * 16 + group + rr * 8;
    if (r >= f.tq) continue;
    float* row = dq + ((int64_t(f.b) * a.o_rows + a.q_begin + f.i0 + r) * a.heads + f.h) * kD;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      auto* cell = reinterpret_cast<float2*>(row + n * 8 + 2 * tig);
      const float2 cur = *cell;
      *cell = float2{cur.x + a.scale * dq_acc[n][2 * rr], cur.y + a.scale * dq_acc[n][2 * rr + 1]};
    }
  }
}

}  // namespace minictx::cuda::attn
