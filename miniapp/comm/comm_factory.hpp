#pragma once
#include <memory>
#include <string>
#include <vector>

#include "comm/mpi_comm.hpp"
#include "device/device.hpp"

namespace minictx {

// The comms compiled in (run.comm values this build accepts).
std::vector<std::string> comm_names();

// The world communicator run.comm names, for buffers in `device`'s memory: MPI itself
// for host memory; for the cuda device, MPI staged through the host or NCCL. `world`
// must already exist (it decides the ranks); it is adopted or wrapped.
std::unique_ptr<Comm> make_world_comm(const std::string& name, std::unique_ptr<MpiComm> world, Device& device);

}  // namespace minictx
