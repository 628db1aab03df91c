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

namespace {

template <class D>
std::unique_ptr<Device> create() {
  return std::make_unique<D>();
}

}  // namespace

const std::vector<DeviceInfo>& device_registry() {
  static const std::vector<DeviceInfo> devices = {
      {DeviceKind::kokkos, create<KokkosDevice>,
       "attention: tiled flash kernel, CBLAS GEMMs on attention.block_q x block_k tiles, fp32"},
#ifdef MINICTX_HAVE_CUDA
      {DeviceKind::cuda, create<CudaDevice>,
       "attention: flash-mma (tensor cores, sm_80+) for head dims 64 and 128 in bf16/fp16; "
       "SIMT kernel for fp32 and other head dims (up to 128)"},
#endif
  };
  return devices;
}

std::unique_ptr<Device> make_device(DeviceKind kind) {
  std::string available;
  for (const auto& d : device_registry()) {
    if (d.kind == kind) return d.create();
    available += (available.empty() ? "" : ", ") + std::string(to_string(d.kind));
  }
  // Every device but the host one is built by a preset of its own (CMakePresets.json).
  input_error("device '" + std::string(to_string(kind)) + "' is not compiled into this build (available: " +
              available + "; build the " + to_string(kind) + " preset)");
}

}  // namespace minictx
