#include "core/cuda/cuda_check.hpp"

#include <cublasLt.h>
#include <mpi.h>

#include "core/error.hpp"

namespace minictx::cuda {

std::string rank_label() {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (!initialised || finalised) return "rank ?";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return "rank " + std::to_string(rank);
}

void check(cudaError_t code, const char* call) {
  if (code == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next call does not report it again
  fail(rank_label() + ": " + call + " failed: " + cudaGetErrorName(code) + " (" + cudaGetErrorString(code) +
       ")");
}

void check_cublas(int status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  fail(rank_label() + ": " + call + " failed: cuBLAS status " + std::to_string(status));
}

}  // namespace minictx::cuda
