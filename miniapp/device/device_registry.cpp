#include "core/error.hpp"
#include "device/device.hpp"
#include "device/kokkos_device.hpp"

namespace minictx {

Tensor Device::zeros(std::vector<int64_t> shape) {
  Tensor t = alloc(std::move(shape));
  fill(t, 0.0f);
  return t;
}

std::vector<std::string> device_names() { return {"kokkos"}; }

std::unique_ptr<Device> make_device(const std::string& name) {
  if (name == "kokkos") return std::make_unique<KokkosDevice>();
  input_error("device '" + name + "' is not compiled into this build (available: kokkos)");
}

}  // namespace minictx
