#pragma once
#include "bench/bench_clock.hpp"
#include "device/device.hpp"

namespace minictx {

// Peak FLOP/s of this device measured on the spot: the best of several square GEMM
// runs through the device's GEMM in its precision, on random operands, each timed
// from idle to idle (`machine.profile: measure`, `minictx bench`).
double measure_gemm_tflops(Device& device, int n = 1024, int repeats = 5,
                           BenchClock clock = BenchClock::wall);

// The device's GEMM rate at a side that fills it (machine.profile: measure): from 1024,
// doubled while one product takes under 20 ms, up to 8192. A core stays at 1024; a GPU
// reaches its tensor cores' rate only at the larger sides (at 1024 an H200 shows an
// eighth of it, launch and synchronisation included).
double measure_peak_tflops(Device& device);

}  // namespace minictx
