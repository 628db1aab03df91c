#include <cstdint>

#include "core/cuda/spin_kernel.hpp"

namespace minictx::cuda {
namespace {

__device__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(uint64_t ns) {
  const uint64_t start = global_ns();
  while (global_ns() - start < ns) __nanosleep(10000);
}

}  // namespace

void spin(cudaStream_t stream, double seconds) {
  const uint64_t ns = seconds < 0 ? UINT64_MAX : uint64_t(seconds * 1e9);
  spin_kernel<<<1, 1, 0, stream>>>(ns);
}

}  // namespace minictx::cuda
