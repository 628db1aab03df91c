#pragma once
// Helpers the device tests share: moving fp64 test data to and from a Device, the
// generated inputs, and the verify error metric.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/synthetic_data.hpp"
#include "device/device.hpp"

namespace minictx::test {

inline Tensor upload(Device& dev, const std::vector<double>& v, std::vector<int64_t> shape) {
  Tensor t = dev.alloc(std::move(shape));
  std::vector<float> host(v.begin(), v.end());
  dev.upload(t, host.data());
  return t;
}

inline std::vector<double> download(Device& dev, const Tensor& t) {
  std::vector<float> host(static_cast<size_t>(t.numel()));
  dev.download(t, host.data());
  return {host.begin(), host.end()};
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

}  // namespace minictx::test
