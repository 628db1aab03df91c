#pragma once
#include "bench/bench_clock.hpp"
#include "device/device.hpp"

namespace minictx {

// Peak FLOP/s of this device measured on the spot: the best of several square GEMM
// runs through the device's GEMM in its precision, on random operands, each timed
// from idle to idle (`machine.profile: measure`, `minictx bench`).
double measure_gemm_tflops(Device& device, int n = 1024, int repeats = 5,
                           BenchClock clock = BenchClock::wall);

}  // namespace minictx
