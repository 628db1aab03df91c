#pragma once
// How long the device takes for one kernel call, by the profile's peak and efficiency
// curves (datasheet) or, for the host device, by the rates `minictx bench` measured.
#include <cstdint>
#include <string>

#include "config/machine_profile.hpp"
#include "config/run_config.hpp"
#include "model/elementwise_work.hpp"

namespace minictx {

class KernelRates {
 public:
  KernelRates(const ProjectionProfile& profile, DType dtype);

  // C[m, n] = A[m, k]·B[k, n]: 2mnk FLOPs at the GEMM efficiency of its size.
  double gemm_seconds(double m, double n, double k) const;
  // One attention kernel call of `flops` (FlashAttention convention; the backward's own,
  // 2.5× the forward's) at head dim d on a block of q_rows × k_rows, under the causal
  // mask's diagonal (`causal`) or without a mask: at the efficiency of that head dim,
  // length √(q_rows · k_rows) and mask.
  double attention_seconds(bool backward, double flops, int head_dim, double q_rows, double k_rows,
                           bool causal) const;
  // One element-wise call: its bytes (at the dtype's element size) at the kernel's rate,
  // measured or else the device memory's bandwidth.
  double elementwise_seconds(const ElementwiseCall& c) const;
  // One kernel call that reads `bytes` once at the device memory's bandwidth (a reduction
  // such as the gradient check's dot products).
  double read_seconds(double bytes) const;
  double call_seconds() const { return call_s_; }
  double peak_flops() const { return peak_; }
  // Bytes per element the device keeps activations in.
  double element_bytes() const { return element_bytes_; }

 private:
  const ProjectionProfile& profile_;
  double peak_ = 0, call_s_ = 0, element_bytes_ = 4;
};

}  // namespace minictx
