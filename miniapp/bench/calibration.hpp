#pragma once
#include <cstdint>
#include <string>

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

// Why the three n × n matrices of a square GEMM, `element_bytes` each, do not fit in
// `capacity_per_rank` bytes, or "" if they do (any n: the size saturates, never wraps).
std::string square_gemm_refusal(int64_t n, int64_t element_bytes, int64_t capacity_per_rank);

}  // namespace minictx
