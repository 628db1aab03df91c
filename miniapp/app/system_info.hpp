#pragma once
#include <map>
#include <string>

namespace minictx {

// What this process runs on and was linked with, as provenance keys: cpu_model,
// cpu_cores (online), node_memory_mib, rdma_ports (the RDMA NICs' ports, rates and link
// layers), os (uname: system, release, version, machine), hdf5_version, kokkos_version. A
// fact the system does not give is left out, never guessed.
std::map<std::string, std::string> host_system_facts();

}  // namespace minictx
