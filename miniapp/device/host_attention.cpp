#include "device/host_attention.hpp"

#include <cblas.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "device/host_row_math.hpp"
#include "device/visible_keys.hpp"

namespace minictx::host {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Head h of batch b of a [B, L, heads, dim] tensor, from row `begin` on; rows are ld apart.
struct HeadRows {
  float* ptr;
  int ld;
};
inline HeadRows head_rows(const Tensor& t, const AttnShape& s, int heads, int dim, int b, int64_t begin,
                          int h) {
  const int ld = heads * dim;
  const int64_t rows_per_batch = t.numel() / (int64_t(s.batch) * ld);
  return {t.data() + (b * rows_per_batch + begin) * ld + int64_t(h) * dim, ld};
}
// Row `begin` of (b, h) in a [B, H, L] per-row vector (delta).
inline float* row_vector(const Tensor& t, const AttnShape& s, int b, int h, int64_t begin) {
  const int64_t len = t.numel() / (int64_t(s.batch) * s.heads);
  return t.data() + (int64_t(b) * s.heads + h) * len + begin;
}

// Row `begin` of (b, h) in an LSE tensor of two planes [2·B, H, L] (Device::lse_planes):
// hi, the LSE in fp32, and lo, the part of it hi rounds off.
struct LseRows {
  float* hi;
  float* lo;
};
inline LseRows lse_rows(const Tensor& t, const AttnShape& s, int b, int h, int64_t begin) {
  const int64_t plane = t.numel() / 2, len = plane / (int64_t(s.batch) * s.heads);
  float* hi = t.data() + (int64_t(b) * s.heads + h) * len + begin;
  return {hi, hi + plane};
}

// The scores the GEMMs give are q·kᵀ unscaled, as an eager framework's are; every
// exponential is one exp2_clamped of them times log2 e / sqrt(head_dim), formed after the
// row's shift is subtracted (forward) or in double (backward), so that scores of 10⁴ lose
// nothing to the rounding of a scaled score. The LSE is natural log, held in two parts.
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;
inline float base2_scale(int head_dim) { return float(kLog2e / std::sqrt(double(head_dim))); }

// hi + lo = x, hi the nearest float.
inline void split(double x, float& hi, float& lo) {
  hi = float(x);
  lo = float(x - double(hi));
}

// Scratch of one kernel call, reused across calls of the same thread: the ring backends
// call the kernel once per block, and allocation would show in their step time.
struct Scratch {
  std::vector<float> s, dp, acc, run_max, run_sum;
  std::vector<int> first, visible;
  void reserve(int bq, int bk, int d) {
    s.resize(size_t(bq) * bk);
    dp.resize(size_t(bq) * bk);
    acc.resize(size_t(bq) * d);
    run_max.resize(size_t(bq));
    run_sum.resize(size_t(bq));
    first.resize(size_t(bq));
    visible.resize(size_t(bq));
  }
};
Scratch& scratch(int bq, int bk, int d) {
  thread_local Scratch sc;
  sc.reserve(bq, bk, d);
  return sc;
}

// visible[i] = how many leading keys of the tile query i sees. Positions grow along a
// shard and padding sits at its end, so the visible keys of a row are a prefix of the
// tile and the prefix grows with the row. Returns the longest prefix (0: tile skipped).
int visible_prefixes(const AttnShape& s, const int64_t* qpos, int tq, const int64_t* kpos, int tk,
                     int* visible) {
  const int real = int(std::lower_bound(kpos, kpos + tk, s.real_len) - kpos);
  int longest = 0;
  for (int i = 0; i < tq; ++i) {
    const int causal_end = s.causal ? int(std::upper_bound(kpos, kpos + tk, qpos[i]) - kpos) : tk;
    visible[i] = std::min(real, causal_end);
    longest = std::max(longest, visible[i]);
  }
  return longest;
}

// first[i], visible[i]: query i of the tile sees keys [first[i], visible[i]) of the tile.
// Without documents or a window first = 0 (visible_prefixes); with them the prefix is cut
// to the query's document and window (visible_keys), a range of the tile because
// positions grow along it. Returns the largest end (0: tile skipped).
int visible_ranges(const AttnShape& s, int b, const int64_t* qpos, int tq, const int64_t* kpos, int tk,
                   int* first, int* visible) {
  std::fill(first, first + tq, 0);
  const int longest = visible_prefixes(s, qpos, tq, kpos, tk, visible);
  if ((!s.documents && s.window == 0) || longest == 0) return longest;
  int end_max = 0;
  for (int i = 0; i < tq; ++i) {
    const KeyRange keys = visible_keys(s, b, qpos[i]);
    first[i] = int(std::lower_bound(kpos, kpos + tk, keys.first) - kpos);
    visible[i] = std::min(visible[i], int(std::lower_bound(kpos, kpos + tk, keys.end) - kpos));
    if (visible[i] <= first[i]) first[i] = visible[i] = 0;
    end_max = std::max(end_max, visible[i]);
  }
  return end_max;
}

// Key tiles past this one are all masked for every query of the tile.
inline bool keys_exhausted(const AttnShape& s, int64_t first_key_pos, int64_t last_query_pos) {
  const int64_t last_seen = s.causal       ? last_query_pos
                            : s.window > 0 ? last_query_pos + s.window - 1
                                           : std::numeric_limits<int64_t>::max();
  return first_key_pos >= s.real_len || first_key_pos > last_seen;
}

// Forward of one (batch, head) over all query and key tiles of the block.
void fwd_head(const AttnShape& s, const AttnFwdBlock& a, int b, int h) {
  const int d = s.head_dim, dv = s.value_dim();
  const int g = h / (s.heads / s.kv_heads);
  const float scale2 = base2_scale(d);
  const HeadRows q = head_rows(*a.q.tensor, s, s.heads, d, b, a.q.begin, h);
  const HeadRows k = head_rows(*a.k.tensor, s, s.kv_heads, d, b, a.k.begin, g);
  const HeadRows v = head_rows(*a.v.tensor, s, s.kv_heads, dv, b, a.v.begin, g);
  const HeadRows o = head_rows(*a.o, s, s.heads, dv, b, a.q.begin, h);
  const LseRows lse = lse_rows(*a.lse, s, b, h, a.q.begin);

  // A tile never exceeds its block, so the scratch stays what the block needs.
  const int bq = int(std::min<int64_t>(s.block_q, a.q.len)), bk = int(std::min<int64_t>(s.block_k, a.k.len));
  Scratch& sc = scratch(bq, bk, dv);
  float *acc = sc.acc.data(), *run_max = sc.run_max.data(), *run_sum = sc.run_sum.data();
  int *first = sc.first.data(), *visible = sc.visible.data();
  for (int64_t i0 = 0; i0 < a.q.len; i0 += bq) {
    const int tq = int(std::min<int64_t>(bq, a.q.len - i0));
    const int64_t* qpos = a.q.positions + i0;
    std::fill(run_max, run_max + tq, kNegInf);
    std::fill(run_sum, run_sum + tq, 0.0f);
    std::fill(acc, acc + size_t(tq) * dv, 0.0f);
    for (int64_t j0 = 0; j0 < a.k.len; j0 += bk) {
      const int64_t* kpos = a.k.positions + j0;
      if (keys_exhausted(s, kpos[0], qpos[tq - 1])) break;
      const int tk =
          visible_ranges(s, b, qpos, tq, kpos, int(std::min<int64_t>(bk, a.k.len - j0)), first, visible);
      if (tk == 0) continue;
      float* scores = sc.s.data();  // [tq, tk]: only keys some row of the tile sees
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tq, tk, d, 1.0f, q.ptr + i0 * q.ld, q.ld,
                  k.ptr + j0 * k.ld, k.ld, 0.0f, scores, tk);
      for (int i = 0; i < tq; ++i) {
        float* srow = scores + size_t(i) * tk;
        const int lo = first[i], n = visible[i];
        const float new_max = std::max(run_max[i], row_max(srow + lo, n - lo));
        std::fill(srow, srow + lo, 0.0f);
        std::fill(srow + n, srow + tk, 0.0f);
        if (new_max == kNegInf) continue;  // nothing visible yet: the row stays empty
        const float rescale = std::exp2((run_max[i] - new_max) * scale2);  // 0 on the first visible tile
        run_sum[i] = run_sum[i] * rescale + exp2_shift_sum(srow + lo, n - lo, new_max, scale2);
        run_max[i] = new_max;
        if (rescale != 1.0f) scale_row(acc + size_t(i) * dv, dv, rescale);
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, tq, dv, tk, 1.0f, scores, tk, v.ptr + j0 * v.ld,
                  v.ld, 1.0f, acc, dv);
    }
    for (int i = 0; i < tq; ++i) {
      if (run_sum[i] == 0.0f) continue;  // no visible key in this block
      float* arow = acc + size_t(i) * dv;
      scale_row(arow, dv, 1.0f / run_sum[i]);
      const double block_lse = kLn2 * (double(run_max[i]) * scale2 + std::log2(double(run_sum[i])));
      lse_merge_row(o.ptr + (i0 + i) * o.ld, lse.hi[i0 + i], lse.lo[i0 + i], arow, block_lse, dv);
    }
  }
}

// Backward of one (batch, kv head): loops the query heads that share it, so dk/dv of a
// kv head are written by one iteration only.
void bwd_kv_head(const AttnShape& s, const AttnBwdBlock& a, int b, int g) {
  const int d = s.head_dim, d_v = s.value_dim();
  const int group = s.heads / s.kv_heads;
  const float scale = 1.0f / std::sqrt(float(d));
  const double scale2 = base2_scale(d);  // as in the forward: the same P
  const HeadRows k = head_rows(*a.k.tensor, s, s.kv_heads, d, b, a.k.begin, g);
  const HeadRows v = head_rows(*a.v.tensor, s, s.kv_heads, d_v, b, a.v.begin, g);
  const HeadRows dk = head_rows(*a.dk, s, s.kv_heads, d, b, a.k.begin, g);
  const HeadRows dv = head_rows(*a.dv, s, s.kv_heads, d_v, b, a.k.begin, g);
  const int bq = int(std::min<int64_t>(s.block_q, a.q.len)), bk = int(std::min<int64_t>(s.block_k, a.k.len));
  Scratch& sc = scratch(bq, bk, d);
  int *first = sc.first.data(), *visible = sc.visible.data();

  for (int h = g * group; h < (g + 1) * group; ++h) {
    const HeadRows q = head_rows(*a.q.tensor, s, s.heads, d, b, a.q.begin, h);
    const HeadRows dout = head_rows(*a.dout, s, s.heads, d_v, b, a.q.begin, h);
    const HeadRows dq = head_rows(*a.dq, s, s.heads, d, b, a.q.begin, h);
    const LseRows lse = lse_rows(*a.lse, s, b, h, a.q.begin);
    const float* delta = row_vector(*a.delta, s, b, h, a.q.begin);
    // Key tiles outside: the query-side operands (q, dout, dq) stream past once per key
    // tile, S / block_k times, instead of k, v, dk, dv once per query tile, S / block_q
    // times; and dk, dv of the key tile stay in cache.
    for (int64_t j0 = 0; j0 < a.k.len; j0 += bk) {
      const int64_t* kpos = a.k.positions + j0;
      if (kpos[0] >= s.real_len) break;  // padding from here on
      for (int64_t i0 = 0; i0 < a.q.len; i0 += bq) {
        const int tq = int(std::min<int64_t>(bq, a.q.len - i0));
        const int64_t* qpos = a.q.positions + i0;
        if (keys_exhausted(s, kpos[0], qpos[tq - 1])) continue;  // later query tiles may see it
        const int tk =
            visible_ranges(s, b, qpos, tq, kpos, int(std::min<int64_t>(bk, a.k.len - j0)), first, visible);
        if (tk == 0) continue;
        float *p = sc.s.data(), *dp = sc.dp.data();  // [tq, tk]
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tq, tk, d, 1.0f, q.ptr + i0 * q.ld, q.ld,
                    k.ptr + j0 * k.ld, k.ld, 0.0f, p, tk);
        for (int i = 0; i < tq; ++i) {
          float* prow = p + size_t(i) * tk;
          const float row_lse = lse.hi[i0 + i];
          // A row with no visible key anywhere has lse = -inf and no gradient.
          const int lo = row_lse == kNegInf ? 0 : first[i], n = row_lse == kNegInf ? 0 : visible[i];
          if (n > lo) exp2_affine(prow + lo, n - lo, scale2, (double(row_lse) + lse.lo[i0 + i]) * kLog2e);
          std::fill(prow, prow + lo, 0.0f);
          std::fill(prow + n, prow + tk, 0.0f);
        }
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, tk, d_v, tq, 1.0f, p, tk,
                    dout.ptr + i0 * dout.ld, dout.ld, 1.0f, dv.ptr + j0 * dv.ld, dv.ld);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tq, tk, d_v, 1.0f, dout.ptr + i0 * dout.ld,
                    dout.ld, v.ptr + j0 * v.ld, v.ld, 0.0f, dp, tk);
        for (int i = 0; i < tq; ++i)  // p becomes dS; masked entries stay 0
          softmax_grad(p + size_t(i) * tk + first[i], dp + size_t(i) * tk + first[i], visible[i] - first[i],
                       delta[i0 + i]);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, tq, d, tk, scale, p, tk, k.ptr + j0 * k.ld,
                    k.ld, 1.0f, dq.ptr + i0 * dq.ld, dq.ld);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, tk, d, tq, scale, p, tk, q.ptr + i0 * q.ld, q.ld,
                    1.0f, dk.ptr + j0 * dk.ld, dk.ld);
      }
    }
  }
}

}  // namespace

void lse_merge_row(float* o, float& lse_hi, float& lse_lo, const float* o_b, double lse_b, int n) {
  if (lse_b == double(kNegInf)) return;
  if (lse_hi == kNegInf) {
    std::copy(o_b, o_b + n, o);
    split(lse_b, lse_hi, lse_lo);
    return;
  }
  const double lse = double(lse_hi) + lse_lo;
  const auto w = float(1.0 / (1.0 + std::exp(lse - lse_b)));  // σ(lse_b − lse); 0 where exp overflows
  for (int c = 0; c < n; ++c) o[c] -= w * (o[c] - o_b[c]);
  split(std::max(lse, lse_b) + std::log1p(std::exp(-std::fabs(lse - lse_b))), lse_hi, lse_lo);
}

void attn_fwd(const AttnShape& s, const AttnFwdBlock& a) {
  if (a.q.len == 0 || a.k.len == 0) return;
  Kokkos::parallel_for("minictx::attn_fwd",
                       Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, s.batch * s.heads),
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
                       Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, s.batch * s.heads),
                       [&](int bh) {
                         const int b = bh / s.heads, h = bh % s.heads;
                         const HeadRows orow = head_rows(o, s, s.heads, s.value_dim(), b, 0, h);
                         const HeadRows drow = head_rows(dout, s, s.heads, s.value_dim(), b, 0, h);
                         float* out = row_vector(delta, s, b, h, 0);
                         for (int64_t i = 0; i < len; ++i) {
                           float acc = 0.0f;
                           for (int c = 0; c < s.value_dim(); ++c)
                             acc += orow.ptr[i * orow.ld + c] * drow.ptr[i * drow.ld + c];
                           out[i] = acc;
                         }
                       });
}

}  // namespace minictx::host
