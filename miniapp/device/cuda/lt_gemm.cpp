#include "device/cuda/lt_gemm.hpp"

#include "core/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "device/cuda/cuda_footprint.hpp"
#include "device/cuda/elementwise_kernels.hpp"
#include "device/cuda/lt_layout.hpp"

namespace minictx::cuda {
namespace {

// Descriptors of one call, destroyed with it.
struct LtCall {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  ~LtCall() {
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

// The tensor type that holds a precision's operands.
DType dtype_of(Precision p) {
  return p == Precision::bf16 ? DType::bf16 : p == Precision::f16 ? DType::f16 : DType::f32;
}

}  // namespace

LtGemm::LtGemm(cudaStream_t stream, MemoryTracker& memory)
    : stream_(stream), memory_(memory), workspace_bytes_(size_t(kGemmWorkspaceBytes)) {
  CUBLAS_CHECK(cublasLtCreate(&handle_));
  CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
  memory_.add(int64_t(workspace_bytes_));
}

LtGemm::~LtGemm() {
  for (int slot = 0; slot < 2; ++slot) {
    cudaFree(half_[slot]);
    memory_.remove(half_elements_[slot] * 2);
  }
  cudaFree(workspace_);
  memory_.remove(int64_t(workspace_bytes_));
  cublasLtDestroy(handle_);
}

int LtGemm::version() const { return int(cublasLtGetVersion()); }

void* LtGemm::half_buffer(int slot, int64_t elements) {
  if (elements > half_elements_[slot]) {
    CUDA_CHECK(cudaStreamSynchronize(stream_));  // the old buffer may still be read
    CUDA_CHECK(cudaFree(half_[slot]));
    half_[slot] = nullptr;
    memory_.remove(half_elements_[slot] * 2);
    half_elements_[slot] = 0;
    CUDA_CHECK(cudaMalloc(&half_[slot], size_t(elements) * 2));
    half_elements_[slot] = elements;
    memory_.add(elements * 2);
  }
  return half_[slot];
}

const void* LtGemm::product_operand(int slot, const LtOperand& x, Precision precision) {
  if (precision == Precision::f32) {
    require(x.type == DType::f32, "gemm: a 16-bit operand in an fp32 run");
    return x.data;
  }
  if (x.type == dtype_of(precision)) return x.data;
  require(x.type == DType::f32, "gemm: operands of two different 16-bit types");
  void* half = half_buffer(slot, x.numel);
  to_half(static_cast<const float*>(x.data), half, x.numel, precision, stream_);
  CUDA_CHECK(cudaGetLastError());
  return half;
}

void LtGemm::run(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const LtOperand& a,
                 const LtOperand& b, float beta, void* c, DType c_type, int64_t ldc, Precision precision,
                 const void* c_in) {
  if (m == 0 || n == 0) return;
  const void* pa = product_operand(0, a, precision);
  const void* pb = product_operand(1, b, precision);
  const cudaDataType_t in_type = precision == Precision::f32    ? CUDA_R_32F
                                 : precision == Precision::bf16 ? CUDA_R_16BF
                                                                : CUDA_R_16F;
  const cudaDataType_t out_type = c_type == DType::f32 ? CUDA_R_32F : in_type;
  require(c_type == DType::f32 || c_type == dtype_of(precision),
          "gemm: a 16-bit result of another type than the run's");
  const int64_t lda = a.ld, ldb = b.ld;
  const LtProblem p = lt_problem(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  LtCall call;
  const cublasOperation_t op_first = p.first.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = p.second.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&call.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof(op_first)));
  CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof(op_second)));
  auto layout = [](cublasLtMatrixLayout_t* l, cudaDataType_t type, const LtMatrix& mat) {
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(l, type, uint64_t(mat.rows), uint64_t(mat.cols), mat.ld));
  };
  layout(&call.a, in_type, p.first);
  layout(&call.b, in_type, p.second);
  layout(&call.c, out_type, p.c);

  const auto key = std::make_tuple(trans_a, trans_b, m, n, k, lda, ldb, ldc, int(precision), int(c_type));
  auto it = algos_.find(key);
  if (it == algos_.end()) {
    cublasLtMatmulPreference_t pref = nullptr;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                         sizeof(workspace_bytes_));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle_, call.op, call.a, call.b, call.c,
                                                                 call.c, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    CUBLAS_CHECK(status);
    if (found == 0)
      fail(rank_label() + ": cublasLtMatmulAlgoGetHeuristic found no algorithm for a " + std::to_string(m) +
           "x" + std::to_string(n) + "x" + std::to_string(k) + " GEMM");
    it = algos_.emplace(key, result.algo).first;
  }
  CUBLAS_CHECK(cublasLtMatmul(handle_, call.op, &alpha, pb, call.a, pa, call.b, &beta, c_in ? c_in : c,
                              call.c, c, call.c, &it->second, workspace_, workspace_bytes_, stream_));
}

}  // namespace minictx::cuda
