#include "core/error.hpp"
#include "device/device.hpp"
#include "device/kokkos_device.hpp"
#ifdef MINICTX_HAVE_CUDA
#include "device/cuda/cuda_device.hpp"
#endif

namespace minictx {

Tensor Device::zeros(std::vector<int64_t> shape) {
  Tensor t = alloc(std::move(shape));
  fill(t, 0.0f);
  return t;
}

GemmDims gemm_dims(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c) {
  const int64_t m = trans_a ? matrix_cols(a) : matrix_rows(a);
  const int64_t k = trans_a ? matrix_rows(a) : matrix_cols(a);
  const int64_t kb = trans_b ? matrix_cols(b) : matrix_rows(b);
  const int64_t n = trans_b ? matrix_rows(b) : matrix_cols(b);
  require(k == kb && matrix_rows(c) == m && matrix_cols(c) == n, "gemm: operand shapes do not conform");
  return {m, n, k};
}

std::vector<std::string> device_names() {
#ifdef MINICTX_HAVE_CUDA
  return {"kokkos", "cuda"};
#else
  return {"kokkos"};
#endif
}

std::unique_ptr<Device> make_device(const std::string& name) {
  if (name == "kokkos") return std::make_unique<KokkosDevice>();
#ifdef MINICTX_HAVE_CUDA
  if (name == "cuda") return std::make_unique<CudaDevice>();
#endif
  std::string available;
  for (const auto& d : device_names()) available += (available.empty() ? "" : ", ") + d;
  input_error("device '" + name + "' is not compiled into this build (available: " + available +
              (name == "cuda" ? "; build the cuda preset" : "") + ")");
}

}  // namespace minictx
