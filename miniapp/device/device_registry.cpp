#include "core/error.hpp"
#include "core/fault_seam.hpp"
#include "device/device.hpp"
#include "device/kokkos_device.hpp"
#ifdef MINICTX_HAVE_CUDA
#include "device/cuda/cuda_device.hpp"
#endif

namespace minictx {

namespace {

std::unique_ptr<Device> create_kokkos(const Topology&) { return std::make_unique<KokkosDevice>(); }

#ifdef MINICTX_HAVE_CUDA
std::unique_ptr<Device> create_cuda(const Topology& topology) {
  return std::make_unique<CudaDevice>(topology);
}
#endif

}  // namespace

const std::vector<DeviceInfo>& device_registry() {
  static const std::vector<DeviceInfo> devices = {
      {DeviceKind::kokkos, create_kokkos,
       "attention: tiled flash kernel, CBLAS GEMMs on attention.block_q x block_k tiles, fp32"},
#ifdef MINICTX_HAVE_CUDA
      {DeviceKind::cuda, create_cuda,
       "attention: flash kernels on tensor cores for head dims 64 and 128 in bf16/fp16, by "
       "attention.kernels (auto: sm90 where it runs, else sm80) among " +
           cuda::kernel_families_summary() + "; SIMT kernel for fp32 and other head dims (up to 128)"},
#endif
  };
  return devices;
}

std::unique_ptr<Device> make_device(DeviceKind kind, const Topology& topology) {
  std::string available;
  for (const auto& d : device_registry()) {
    if (d.kind != kind) continue;
    if (fault_seam::fires(fault_seam::Stage::gpu))
      fault_seam::fail_here("the device could not be initialised");
    return d.create(topology);
    available += (available.empty() ? "" : ", ") + std::string(to_string(d.kind));
  }
  // Every device but the host one is built by a preset of its own (CMakePresets.json).
  input_error("device '" + std::string(to_string(kind)) + "' is not compiled into this build (available: " +
              available + "; build the " + to_string(kind) + " preset)");
}

std::unique_ptr<Device> make_host_device(const Topology& topology) {
  return make_device(DeviceKind::kokkos, topology);
}

}  // namespace minictx
