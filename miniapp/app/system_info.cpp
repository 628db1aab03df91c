#include "app/system_info.hpp"

#include <hdf5.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

namespace minictx {
namespace {

// The first "model name" of /proc/cpuinfo (x86); other architectures name the CPU in
// other fields or not at all: then nothing.
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

std::string first_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// The RDMA devices the kernel lists (/sys/class/infiniband), each port as
// "<device>/<port> <rate> <link layer>", e.g. "mlx5_0/1 400 Gb/sec (4X NDR) InfiniBand";
// "" where there are none (Ethernet only, or no sysfs).
std::string rdma_ports() {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> ports;
  for (const auto& device : fs::directory_iterator("/sys/class/infiniband", ec))
    for (const auto& port : fs::directory_iterator(device.path() / "ports", ec))
      ports.push_back(device.path().filename().string() + "/" + port.path().filename().string() + " " +
                      first_line(port.path() / "rate") + " " + first_line(port.path() / "link_layer"));
  std::sort(ports.begin(), ports.end());
  std::string out;
  for (const auto& p : ports) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

std::map<std::string, std::string> host_system_facts() {
  std::map<std::string, std::string> facts;
  if (const std::string model = cpu_model(); !model.empty()) facts["cpu_model"] = model;
  if (const long cores = sysconf(_SC_NPROCESSORS_ONLN); cores > 0) facts["cpu_cores"] = std::to_string(cores);
  if (const long pages = sysconf(_SC_PHYS_PAGES); pages > 0)
    facts["node_memory_mib"] = std::to_string((int64_t(pages) * sysconf(_SC_PAGESIZE)) >> 20);
  if (const std::string ports = rdma_ports(); !ports.empty()) facts["rdma_ports"] = ports;
  struct utsname u {};
  if (uname(&u) == 0)
    facts["os"] = std::string(u.sysname) + " " + u.release + " " + u.version + " " + u.machine;
  unsigned major = 0, minor = 0, release = 0;
  if (H5get_libversion(&major, &minor, &release) >= 0)
    facts["hdf5_version"] =
        std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
  facts["kokkos_version"] = std::to_string(KOKKOS_VERSION / 10000) + "." +
                            std::to_string(KOKKOS_VERSION / 100 % 100) + "." +
                            std::to_string(KOKKOS_VERSION % 100);
  return facts;
}

}  // namespace minictx
