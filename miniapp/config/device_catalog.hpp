#pragma once
// What the deck needs to know of the device kinds. config/ sits below device/, so the
// device layer installs what each kind can do here (install_deck_devices in
// device/device.hpp) before any deck is read; the deck's checks between run.device and
// the other keys ask these capabilities instead of naming a kind.
#include <functional>
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace minictx {

struct DeviceDeckFacts {
  DeviceKind kind{};
  bool kernel_families = false;    // attention.kernels picks among its flash kernel families
  bool layer_kernel_sets = false;  // run.layer_kernels picks among its layer kernel sets
  // It chooses its attention tiles itself, per head dim: attention.block_q/block_k, the
  // host kernel's tiles, would be ignored there.
  bool own_tiles = false;
  // Its attention kernels mask sliding windows (attention.window), merge sink logits
  // (attention.sinks) and take a value head dim of their own (model.head_dim_v).
  bool windows = false;
  bool sinks = false;
  bool value_head_dim = false;
  std::vector<CommKind> comms;  // the comm libraries that can move its tensors (run.comm)
  bool gpu = false;             // a GPU: its runs record it in the provenance (gpu_* keys)
  bool lm_head = false;         // it has the LM head's cross-entropy kernel (model.vocab)
};

void install_device_catalog(std::vector<DeviceDeckFacts> devices);
const DeviceDeckFacts& device_facts(DeviceKind kind);  // every kind, built into this binary or not
bool hosts_comm(const DeviceDeckFacts& device, CommKind comm);
// The kinds that have `capability`, comma-separated ("kokkos"), for error lines.
std::string devices_with(const std::function<bool(const DeviceDeckFacts&)>& capability);

}  // namespace minictx
