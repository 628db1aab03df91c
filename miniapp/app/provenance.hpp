#pragma once
#include <string>

#include "comm/comm.hpp"
#include "device/device.hpp"
#include "io/results.hpp"

namespace minictx {

// Where this run came from: build, libraries, hosts, batch-system environment, command
// line and the deck as given, and on rank 0 the SHA-256 of the binary (binary_sha256).
// Collective over MPI_COMM_WORLD (hostnames are gathered).
Provenance collect_provenance(const Comm& world, const Device& device, const std::string& command_line,
                              const std::string& deck_yaml);

// The SHA-256 of a deck file as read (provenance deck_sha256); "" for no file (the
// built-in quickstart deck). Error when it cannot be read.
std::string deck_file_digest(const std::string& path);

}  // namespace minictx
