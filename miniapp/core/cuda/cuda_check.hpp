#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

// CUDA and cuBLASLt failures become minictx errors: one line naming the rank and the
// call, which main() prints before aborting every rank (never a hang on the others).
namespace minictx::cuda {

// "rank R" of MPI_COMM_WORLD, or "rank ?" before MPI is initialised (unit tests).
std::string rank_label();

void check(cudaError_t code, const char* call);
void check_cublas(int status, const char* call);

// Lets kKernel use `bytes` of dynamic shared memory: raised once per kernel (the first
// call), the outcome checked on every call, naming `what`.
template <auto kKernel>
void allow_shared_memory(size_t bytes, const char* what) {
  static const cudaError_t raised =
      cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
  check(raised, what);
}

}  // namespace minictx::cuda

#define CUDA_CHECK(call) ::minictx::cuda::check((call), #call)
#define CUBLAS_CHECK(call) ::minictx::cuda::check_cublas(int(call), #call)
