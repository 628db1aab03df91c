#pragma once
// Helpers the device tests share: moving fp64 test data to and from a Device, the
// generated inputs, and the verify error metric.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/synthetic_data.hpp"
#include "device/device.hpp"
#include "device/kokkos_device.hpp"
#include "reference/reference.hpp"

namespace minictx::test {

// The host device the tests of one executable share (Kokkos starts once per process).
inline KokkosDevice& host_device() {
  static KokkosDevice dev;
  return dev;
}

inline Tensor upload(Device& dev, const std::vector<double>& v, std::vector<int64_t> shape,
                     DType dtype = DType::f32) {
  Tensor t = dev.alloc(std::move(shape), dtype);
  std::vector<float> host(v.begin(), v.end());
  dev.upload(t, host.data());
  return t;
}

inline std::vector<double> download(Device& dev, const Tensor& t) {
  std::vector<float> host(static_cast<size_t>(t.numel()));
  dev.download(t, host.data());
  return {host.begin(), host.end()};
}

// The natural-log LSE of each row: the first plane of an LSE tensor (Device::alloc_lse).
inline std::vector<double> lse_of(Device& dev, const Tensor& lse) {
  std::vector<double> v = download(dev, lse);
  v.resize(v.size() / size_t(dev.lse_planes()));
  return v;
}

inline std::vector<double> generated(size_t n, uint64_t id) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = data_value(5, id, i);
  return v;
}

// max |a − b| / max |b|: the verify metric.
inline double rel_err(const std::vector<double>& a, const std::vector<double>& b) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::fabs(a[i] - b[i]));
    ref = std::max(ref, std::fabs(b[i]));
  }
  return err / ref;
}

// Where `got` differs from `want` by more than tol · max |want|, for a failing
// expectation's message: how many elements, the first, and which 8-row bands of a
// 64-row tile and 8-column bands of a `col_period`-column group ('#') hold them: the
// pattern a wrong fragment layout, swizzle or tile offset leaves. Row-major, `cols` a row.
inline std::string where_wrong(const std::vector<double>& got, const std::vector<double>& want, int64_t cols,
                               int64_t col_period, double tol) {
  double ref = 0;
  for (double w : want) ref = std::max(ref, std::fabs(w));
  std::string row_bands(8, '.'), col_bands(size_t((col_period + 7) / 8), '.');
  int64_t wrong = 0, first = -1;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= tol * ref)) {
      if (wrong++ == 0) first = int64_t(i);
      row_bands[size_t(int64_t(i) / cols % 64 / 8)] = '#';
      col_bands[size_t(int64_t(i) % cols % col_period / 8)] = '#';
    }
  }
  if (wrong == 0) return "no element beyond the tolerance";
  std::ostringstream m;
  m << wrong << " of " << got.size() << " elements wrong; first at row " << first / cols << ", column "
    << first % cols << ": " << got[size_t(first)] << " for " << want[size_t(first)] << "; rows mod 64 by 8s "
    << row_bands << ", columns mod " << col_period << " by 8s " << col_bands;
  return m.str();
}

// The fp64 reference's description of attention over `len` rows per batch.
inline reference::Problem reference_attention(int batch, int heads, int kv_heads, int head_dim, int64_t len,
                                              bool causal) {
  reference::Problem p;
  p.batch = batch;
  p.seq_len = len;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.head_dim = head_dim;
  p.causal = causal;
  return p;
}

// One attention problem: generated global q, k, v, dO with a row at each of `positions`,
// and the fp64 reference's outputs and gradients for it.
struct AttentionProblem {
  std::vector<double> q, k, v, dout;
  std::vector<int64_t> positions;
  reference::AttentionResult ref;
};

inline AttentionProblem attention_problem_at(int batch, int heads, int kv_heads, int head_dim,
                                             std::vector<int64_t> positions, bool causal) {
  const int64_t len = int64_t(positions.size());
  const reference::Problem p = reference_attention(batch, heads, kv_heads, head_dim, len, causal);
  const size_t qn = static_cast<size_t>(batch * len * heads * head_dim),
               kn = qn / static_cast<size_t>(heads / kv_heads);
  AttentionProblem a{generated(qn, 1), generated(kn, 2),     generated(kn, 3),
                     generated(qn, 4), std::move(positions), {}};
  a.ref = reference::attention_on(p, a.q, a.k, a.v, a.dout, a.positions);
  return a;
}

// The same at positions 3 + i·stride.
inline AttentionProblem attention_problem(int batch, int heads, int kv_heads, int head_dim, int64_t len,
                                          bool causal, int64_t stride) {
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < len; ++i) positions.push_back(3 + i * stride);
  return attention_problem_at(batch, heads, kv_heads, head_dim, std::move(positions), causal);
}

}  // namespace minictx::test
