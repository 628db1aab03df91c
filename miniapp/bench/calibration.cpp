#include "bench/calibration.hpp"

#include <algorithm>

namespace minictx {

double measure_gemm_tflops(Device& device, int n, int repeats, BenchClock clock) {
  Tensor a = device.alloc({n, n}), b = device.alloc({n, n}), c = device.alloc({n, n});
  device.fill(a, 0.5f);
  device.fill(b, 0.25f);
  device.gemm(false, false, 1.0f, a, b, 0.0f, c);  // warm-up: page in, pick kernels
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const double t0 = bench_now(clock);
    device.gemm(false, false, 1.0f, a, b, 0.0f, c);
    best = std::min(best, bench_now(clock) - t0);
  }
  return 2.0 * double(n) * n * n / best / 1e12;
}

}  // namespace minictx
