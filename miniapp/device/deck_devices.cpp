// What the deck may ask of each device kind. Known for every kind, built into this binary
// or not, so that a deck for a GPU is checked the same on a host build.
#include "config/device_catalog.hpp"
#include "device/device.hpp"

namespace minictx {

void install_deck_devices() {
  DeviceDeckFacts host;
  host.kind = DeviceKind::kokkos;
  host.comms = {CommKind::mpi};
  host.windows = host.sinks = host.value_head_dim = host.lm_head = true;
  // The GPU's flash kernels come in families (attention.kernels), its layer kernels in
  // sets (run.layer_kernels), and its flash kernels pick their tiles per head dim; they have no sliding
  // windows, sinks or value head dim of its own yet. NCCL moves its device memory.
  DeviceDeckFacts gpu;
  gpu.kind = DeviceKind::cuda;
  gpu.kernel_families = true;
  gpu.layer_kernel_sets = true;
  gpu.own_tiles = true;
  gpu.comms = {CommKind::mpi, CommKind::nccl};
  gpu.gpu = true;
  install_device_catalog({host, gpu});
}

}  // namespace minictx
