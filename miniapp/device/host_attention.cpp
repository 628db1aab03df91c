#include "device/host_attention.hpp"

#include <cblas.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace minictx::host {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// log(sigmoid(x)) without overflow.
inline float log_sigmoid(float x) { return x > 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x)); }
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// Head h of batch b of a [B, L, heads, D] tensor, from row `begin` on; rows are ld apart.
struct HeadRows {
  float* ptr;
  int ld;
};
inline HeadRows head_rows(const Tensor& t, const AttnShape& s, int heads, int b, int64_t begin, int h) {
  const int ld = heads * s.head_dim;
  const int64_t rows_per_batch = t.numel() / (int64_t(s.batch) * ld);
  return {t.data() + (b * rows_per_batch + begin) * ld + int64_t(h) * s.head_dim, ld};
}
// Row `begin` of (b, h) in a [B, H, L] per-row vector (lse, delta).
inline float* row_vector(const Tensor& t, const AttnShape& s, int b, int h, int64_t begin) {
  const int64_t len = t.numel() / (int64_t(s.batch) * s.heads);
  return t.data() + (int64_t(b) * s.heads + h) * len + begin;
}

// Key tiles past this one are all masked for every query of the tile: positions grow
// along a shard and padding sits at its end, so the scan can stop.
inline bool keys_exhausted(const AttnShape& s, int64_t first_key_pos, int64_t last_query_pos) {
  return first_key_pos >= s.real_len || (s.causal && first_key_pos > last_query_pos);
}
inline bool key_visible(const AttnShape& s, int64_t key_pos, int64_t query_pos) {
  return key_pos < s.real_len && (!s.causal || key_pos <= query_pos);
}

// Forward of one (batch, head) over all query and key tiles of the block.
void fwd_head(const AttnShape& s, const AttnFwdBlock& a, int b, int h) {
  const int d = s.head_dim;
  const int g = h / (s.heads / s.kv_heads);
  const float scale = 1.0f / std::sqrt(float(d));
  const HeadRows q = head_rows(*a.q.tensor, s, s.heads, b, a.q.begin, h);
  const HeadRows k = head_rows(*a.k.tensor, s, s.kv_heads, b, a.k.begin, g);
  const HeadRows v = head_rows(*a.v.tensor, s, s.kv_heads, b, a.v.begin, g);
  const HeadRows o = head_rows(*a.o, s, s.heads, b, a.q.begin, h);
  float* lse = row_vector(*a.lse, s, b, h, a.q.begin);

  const int bq = s.block_q, bk = s.block_k;
  std::vector<float> scores(size_t(bq) * bk), acc(size_t(bq) * d), row_max(bq), row_sum(bq);
  for (int64_t i0 = 0; i0 < a.q.len; i0 += bq) {
    const int tq = int(std::min<int64_t>(bq, a.q.len - i0));
    const int64_t* qpos = a.q.positions + i0;
    std::fill(row_max.begin(), row_max.end(), kNegInf);
    std::fill(row_sum.begin(), row_sum.end(), 0.0f);
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t j0 = 0; j0 < a.k.len; j0 += bk) {
      const int64_t* kpos = a.k.positions + j0;
      if (keys_exhausted(s, kpos[0], qpos[tq - 1])) break;
      const int tk = int(std::min<int64_t>(bk, a.k.len - j0));
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tq, tk, d, scale, q.ptr + i0 * q.ld, q.ld,
                  k.ptr + j0 * k.ld, k.ld, 0.0f, scores.data(), tk);
      for (int i = 0; i < tq; ++i) {
        float* srow = scores.data() + size_t(i) * tk;
        float tile_max = kNegInf;
        for (int j = 0; j < tk; ++j) {
          if (!key_visible(s, kpos[j], qpos[i])) srow[j] = kNegInf;
          tile_max = std::max(tile_max, srow[j]);
        }
        const float new_max = std::max(row_max[i], tile_max);
        if (new_max == kNegInf) {  // nothing visible yet: the row stays empty
          std::fill(srow, srow + tk, 0.0f);
          continue;
        }
        const float rescale = std::exp(row_max[i] - new_max);
        float sum = 0.0f;
        for (int j = 0; j < tk; ++j) {
          srow[j] = std::exp(srow[j] - new_max);
          sum += srow[j];
        }
        row_sum[i] = row_sum[i] * rescale + sum;
        row_max[i] = new_max;
        float* arow = acc.data() + size_t(i) * d;
        for (int c = 0; c < d; ++c) arow[c] *= rescale;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, tq, d, tk, 1.0f, scores.data(), tk,
                  v.ptr + j0 * v.ld, v.ld, 1.0f, acc.data(), d);
    }
    for (int i = 0; i < tq; ++i) {
      if (row_sum[i] == 0.0f) continue;  // no visible key in this block
      float* arow = acc.data() + size_t(i) * d;
      const float inv = 1.0f / row_sum[i];
      for (int c = 0; c < d; ++c) arow[c] *= inv;
      lse_merge_row(o.ptr + (i0 + i) * o.ld, lse[i0 + i], arow, row_max[i] + std::log(row_sum[i]), d);
    }
  }
}

// Backward of one (batch, kv head): loops the query heads that share it, so dk/dv of a
// kv head are written by one iteration only.
void bwd_kv_head(const AttnShape& s, const AttnBwdBlock& a, int b, int g) {
  const int d = s.head_dim;
  const int group = s.heads / s.kv_heads;
  const float scale = 1.0f / std::sqrt(float(d));
  const HeadRows k = head_rows(*a.k.tensor, s, s.kv_heads, b, a.k.begin, g);
  const HeadRows v = head_rows(*a.v.tensor, s, s.kv_heads, b, a.v.begin, g);
  const HeadRows dk = head_rows(*a.dk, s, s.kv_heads, b, a.k.begin, g);
  const HeadRows dv = head_rows(*a.dv, s, s.kv_heads, b, a.k.begin, g);
  const int bq = s.block_q, bk = s.block_k;
  std::vector<float> p(size_t(bq) * bk), dp(size_t(bq) * bk);

  for (int h = g * group; h < (g + 1) * group; ++h) {
    const HeadRows q = head_rows(*a.q.tensor, s, s.heads, b, a.q.begin, h);
    const HeadRows dout = head_rows(*a.dout, s, s.heads, b, a.q.begin, h);
    const HeadRows dq = head_rows(*a.dq, s, s.heads, b, a.q.begin, h);
    const float* lse = row_vector(*a.lse, s, b, h, a.q.begin);
    const float* delta = row_vector(*a.delta, s, b, h, a.q.begin);
    for (int64_t i0 = 0; i0 < a.q.len; i0 += bq) {
      const int tq = int(std::min<int64_t>(bq, a.q.len - i0));
      const int64_t* qpos = a.q.positions + i0;
      for (int64_t j0 = 0; j0 < a.k.len; j0 += bk) {
        const int64_t* kpos = a.k.positions + j0;
        if (keys_exhausted(s, kpos[0], qpos[tq - 1])) break;
        const int tk = int(std::min<int64_t>(bk, a.k.len - j0));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tq, tk, d, scale, q.ptr + i0 * q.ld, q.ld,
                    k.ptr + j0 * k.ld, k.ld, 0.0f, p.data(), tk);
        for (int i = 0; i < tq; ++i) {
          float* prow = p.data() + size_t(i) * tk;
          const float row_lse = lse[i0 + i];
          for (int j = 0; j < tk; ++j)
            prow[j] = (row_lse != kNegInf && key_visible(s, kpos[j], qpos[i])) ? std::exp(prow[j] - row_lse) : 0.0f;
        }
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, tk, d, tq, 1.0f, p.data(), tk,
                    dout.ptr + i0 * dout.ld, dout.ld, 1.0f, dv.ptr + j0 * dv.ld, dv.ld);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tq, tk, d, 1.0f, dout.ptr + i0 * dout.ld, dout.ld,
                    v.ptr + j0 * v.ld, v.ld, 0.0f, dp.data(), tk);
        for (int i = 0; i < tq; ++i) {
          float* prow = p.data() + size_t(i) * tk;
          const float* dprow = dp.data() + size_t(i) * tk;
          for (int j = 0; j < tk; ++j) prow[j] *= dprow[j] - delta[i0 + i];  // p becomes dS
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, tq, d, tk, scale, p.data(), tk,
                    k.ptr + j0 * k.ld, k.ld, 1.0f, dq.ptr + i0 * dq.ld, dq.ld);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, tk, d, tq, scale, p.data(), tk,
                    q.ptr + i0 * q.ld, q.ld, 1.0f, dk.ptr + j0 * dk.ld, dk.ld);
      }
    }
  }
}

}  // namespace

void lse_merge_row(float* o, float& lse, const float* o_b, float lse_b, int n) {
  if (lse_b == kNegInf) return;
  if (lse == kNegInf) {
    std::copy(o_b, o_b + n, o);
    lse = lse_b;
    return;
  }
  const float w = sigmoid(lse_b - lse);
  for (int c = 0; c < n; ++c) o[c] -= w * (o[c] - o_b[c]);
  lse -= log_sigmoid(lse - lse_b);
}

void attn_fwd(const AttnShape& s, const AttnFwdBlock& a) {
  if (a.q.len == 0 || a.k.len == 0) return;
  Kokkos::parallel_for("minictx::attn_fwd", Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, s.batch * s.heads),
                       [&](int bh) { fwd_head(s, a, bh / s.heads, bh % s.heads); });
}

void attn_bwd(const AttnShape& s, const AttnBwdBlock& a) {
  if (a.q.len == 0 || a.k.len == 0) return;
  Kokkos::parallel_for("minictx::attn_bwd",
                       Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, s.batch * s.kv_heads),
                       [&](int bg) { bwd_kv_head(s, a, bg / s.kv_heads, bg % s.kv_heads); });
}

void attn_bwd_delta(const AttnShape& s, const Tensor& o, const Tensor& dout, Tensor& delta) {
  const int64_t len = delta.numel() / (int64_t(s.batch) * s.heads);
  Kokkos::parallel_for("minictx::attn_bwd_delta",
                       Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, s.batch * s.heads), [&](int bh) {
                         const int b = bh / s.heads, h = bh % s.heads;
                         const HeadRows orow = head_rows(o, s, s.heads, b, 0, h);
                         const HeadRows drow = head_rows(dout, s, s.heads, b, 0, h);
                         float* out = row_vector(delta, s, b, h, 0);
                         for (int64_t i = 0; i < len; ++i) {
                           float acc = 0.0f;
                           for (int c = 0; c < s.head_dim; ++c) acc += orow.ptr[i * orow.ld + c] * drow.ptr[i * drow.ld + c];
                           out[i] = acc;
                         }
                       });
}

}  // namespace minictx::host
