#include "bench/calibration.hpp"

#include <algorithm>

#include "bench/attn_problem.hpp"
#include "core/saturating.hpp"
#include "core/synthetic_data.hpp"

namespace minictx {

std::string square_gemm_refusal(int64_t n, int64_t element_bytes, int64_t capacity_per_rank) {
  const int64_t bytes = sat_mul(3 * element_bytes, sat_mul(n, n));
  if (bytes <= capacity_per_rank) return "";
  return "its three " + std::to_string(n) + " x " + std::to_string(n) + " matrices need " +
         (bytes == kSaturated ? "more than 8 EiB" : std::to_string(bytes >> 20) + " MiB") +
         " per rank, more than the " + std::to_string(capacity_per_rank >> 20) +
         " MiB this device offers each of its ranks";
}

double measure_gemm_tflops(Device& device, int n, int repeats, BenchClock clock) {
  // Random operands: a GPU's tensor cores draw less power on constant data and clock
  // higher than they would on a run's. All three in the dtype the device's kernels
  // read, so that a 16-bit GEMM is timed without converting its operands.
  const DType t = device.operand_dtype();
  Tensor a = generated_tensor(device, {n, n}, tensor_id::attn_q, t);
  Tensor b = generated_tensor(device, {n, n}, tensor_id::attn_k, t);
  Tensor c = device.alloc({n, n}, t);
  device.gemm(false, false, 1.0f, a, b, 0.0f, c);  // warm-up: page in, pick kernels
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    // An asynchronous device (cuda) is timed from idle to idle: the clock alone would
    // time the launch.
    device.synchronize();
    const double t0 = bench_now(clock);
    device.gemm(false, false, 1.0f, a, b, 0.0f, c);
    device.synchronize();
    best = std::min(best, bench_now(clock) - t0);
  }
  return 2.0 * double(n) * n * n / best / 1e12;
}

double measure_peak_tflops(Device& device) {
  constexpr int kLargest = 8192;
  constexpr double kEnoughSeconds = 0.02;
  for (int n = 1024;; n *= 2) {
    const double tflops = measure_gemm_tflops(device, n);
    const double seconds = 2.0 * double(n) * n * n / (tflops * 1e12);
    if (n >= kLargest || seconds >= kEnoughSeconds) return tflops;
  }
}

}  // namespace minictx
