#pragma once
#include <cstdint>

// How a row-major GEMM is handed to a column-major BLAS (cuBLASLt): row-major C (m×n)
// is column-major Cᵀ (n×m) = op(B)ᵀ·op(A)ᵀ, so the operands swap and each keeps its own
// transpose flag. Host-only arithmetic, unit-tested without a GPU.
namespace minictx::cuda {

struct LtMatrix {
  int64_t rows, cols, ld;  // the stored column-major matrix, before op()
  bool transpose;          // op() = transpose
};

struct LtProblem {
  LtMatrix first;   // the row-major B's memory
  LtMatrix second;  // the row-major A's memory
  LtMatrix c;       // the row-major C's memory, n×m column-major
};

// op(A) is m×k and op(B) k×n, row-major with leading dimensions lda, ldb, ldc.
inline LtProblem lt_problem(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, int64_t lda,
                            int64_t ldb, int64_t ldc) {
  LtProblem p;
  p.first = {trans_b ? k : n, trans_b ? n : k, ldb, trans_b};
  p.second = {trans_a ? m : k, trans_a ? k : m, lda, trans_a};
  p.c = {n, m, ldc, false};
  return p;
}

}  // namespace minictx::cuda
