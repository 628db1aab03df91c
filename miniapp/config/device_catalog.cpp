#include "config/device_catalog.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace minictx {
namespace {

std::vector<DeviceDeckFacts>& catalog() {
  static std::vector<DeviceDeckFacts> devices;
  return devices;
}

const std::vector<DeviceDeckFacts>& installed() {
  require(!catalog().empty(), "no device kind is installed in the deck (call install_deck_devices first)");
  return catalog();
}

}  // namespace

void install_device_catalog(std::vector<DeviceDeckFacts> devices) { catalog() = std::move(devices); }

const DeviceDeckFacts& device_facts(DeviceKind kind) {
  for (const auto& d : installed())
    if (d.kind == kind) return d;
  require(false, std::string("run.device '") + to_string(kind) + "' has no capabilities installed");
  return catalog().front();
}

bool hosts_comm(const DeviceDeckFacts& device, CommKind comm) {
  return std::find(device.comms.begin(), device.comms.end(), comm) != device.comms.end();
}

std::string devices_with(const std::function<bool(const DeviceDeckFacts&)>& capability) {
  std::string names;
  for (const auto& d : installed())
    if (capability(d)) names += (names.empty() ? "" : ", ") + std::string(to_string(d.kind));
  return names;
}

}  // namespace minictx
