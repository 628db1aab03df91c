#pragma once
#include <string>

#include "comm/comm.hpp"
#include "device/device.hpp"
#include "io/results.hpp"

namespace minictx {

// Where this run came from: build, libraries, hosts, batch-system environment, command
// line and the deck as given. Collective over MPI_COMM_WORLD (hostnames are gathered).
Provenance collect_provenance(const Comm& world, const Device& device, const std::string& command_line,
                              const std::string& deck_yaml);

}  // namespace minictx
