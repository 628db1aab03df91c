#include "app/system_info.hpp"

#include <hdf5.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <Kokkos_Core.hpp>
#include <fstream>

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

}  // namespace

std::map<std::string, std::string> host_system_facts() {
  std::map<std::string, std::string> facts;
  if (const std::string model = cpu_model(); !model.empty()) facts["cpu_model"] = model;
  if (const long cores = sysconf(_SC_NPROCESSORS_ONLN); cores > 0) facts["cpu_cores"] = std::to_string(cores);
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
