#include "project/kernel_rates.hpp"

#include <cmath>

#include "core/error.hpp"

namespace minictx {

KernelRates::KernelRates(const ProjectionProfile& profile, DType dtype) : profile_(profile) {
  const std::string d = dtype == DType::f32 ? "fp32" : dtype == DType::bf16 ? "bf16" : "fp16";
  const auto it = profile.peak_tflops.find(d);
  if (it == profile.peak_tflops.end() || !(it->second > 0))
    input_error("machine profile " + profile.file + " has no peak_tflops for " + d);
  peak_ = it->second * 1e12;
  call_s_ = profile.call_overhead_us * 1e-6;
  element_bytes_ = dtype == DType::f32 ? 4 : 2;
}

double KernelRates::gemm_seconds(double m, double n, double k) const {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  const double size = std::cbrt(m * n * k);
  return 2 * m * n * k / (peak_ * profile_.gemm.at(size)) + call_s_;
}

double KernelRates::attention_seconds(bool backward, double flops, int head_dim, double q_rows, double k_rows,
                                      bool causal) const {
  if (!(flops > 0)) return 0;
  const double eff = profile_.attention.at(backward, causal, head_dim, std::sqrt(q_rows * k_rows));
  return flops / (peak_ * eff) + call_s_;
}

double KernelRates::elementwise_seconds(const ElementwiseCall& c) const {
  if (!(c.rows * c.cols > 0)) return 0;
  const auto it = profile_.elementwise_gb_s.find(to_string(c.kernel));
  const double gb_s = it != profile_.elementwise_gb_s.end() ? it->second : profile_.hbm_gb_s;
  return c.bytes() / 4 * element_bytes_ / (gb_s * 1e9) + call_s_;
}

double KernelRates::read_seconds(double bytes) const {
  return bytes > 0 ? bytes / (profile_.hbm_gb_s * 1e9) + call_s_ : 0;
}

}  // namespace minictx
