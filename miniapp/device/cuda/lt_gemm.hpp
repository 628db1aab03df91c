#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <tuple>

#include "core/dtype.hpp"
#include "core/tensor.hpp"
#include "device/cuda/precision.hpp"

namespace minictx::cuda {

// One operand of LtGemm::run: a row-major [numel / ld, ld] matrix of `type`.
struct LtOperand {
  const void* data;
  DType type;
  int64_t ld;
  int64_t numel;
};

// Row-major C = alpha·op(A)·op(B) + beta·C through cuBLASLt, fp32 accumulation. In
// bf16/fp16 precision the tensor cores do the product: 16-bit A and B of that type are
// read as they are, fp32 ones converted first; C is fp32 or of the 16-bit type. In fp32
// the product is plain fp32 (no TF32), which the fp32 verification tolerance needs. Its
// workspace and conversion buffers count in the device's memory, as tensors do.
class LtGemm {
 public:
  LtGemm(cudaStream_t stream, MemoryTracker& memory);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // op(a) is m×k, op(b) k×n; c is m×n with row stride ldc. c = alpha·op(a)·op(b) + beta·c_in,
  // c_in (of c's type and layout) being c itself unless given: a residual added in the
  // epilogue, with no copy of it into c first.
  void run(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const LtOperand& a,
           const LtOperand& b, float beta, void* c, DType c_type, int64_t ldc, Precision precision,
           const void* c_in = nullptr);
  int version() const;

 private:
  void* half_buffer(int slot, int64_t elements);
  // The operand as the product reads it: itself, or its 16-bit copy in half_[slot].
  const void* product_operand(int slot, const LtOperand& x, Precision precision);

  cudaStream_t stream_;
  MemoryTracker& memory_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  void* half_[2] = {nullptr, nullptr};
  int64_t half_elements_[2] = {0, 0};
  // The heuristic's choice per problem: querying it costs more than many small GEMMs.
  std::map<std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int>,
           cublasLtMatmulAlgo_t>
      algos_;
};

}  // namespace minictx::cuda
