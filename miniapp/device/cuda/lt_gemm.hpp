#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <tuple>

#include "device/cuda/precision.hpp"

namespace minictx::cuda {

// Row-major C = alpha·op(A)·op(B) + beta·C through cuBLASLt, fp32 accumulation. In
// bf16/fp16 precision A and B are converted to that type first (C stays fp32), so the
// tensor cores do the product; in fp32 the product is plain fp32 (no TF32), which the
// fp32 verification tolerance needs.
class LtGemm {
 public:
  explicit LtGemm(cudaStream_t stream);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // a is [rows_a, lda] row-major with op(a) m×k; b likewise k×n; c is m×n with ldc.
  void run(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, int64_t a_numel, const float* b, int64_t ldb, int64_t b_numel, float beta, float* c,
           int64_t ldc, Precision precision);
  int version() const;

 private:
  void* half_buffer(int slot, int64_t elements);

  cudaStream_t stream_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  void* half_[2] = {nullptr, nullptr};
  int64_t half_elements_[2] = {0, 0};
  // The heuristic's choice per problem: querying it costs more than many small GEMMs.
  std::map<std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int>,
           cublasLtMatmulAlgo_t>
      algos_;
};

}  // namespace minictx::cuda
