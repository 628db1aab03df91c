#pragma once
#include <memory>
#include <string>
#include <vector>

#include "comm/mpi_comm.hpp"
#include "device/device.hpp"

namespace minictx {

// The comms compiled into this build, one entry each (comm/comm_factory.cpp): `minictx
// list` and make_world_comm read it. create adopts or wraps `world` for buffers in
// `device`'s memory.
struct CommInfo {
  CommKind kind;
  std::unique_ptr<Comm> (*create)(std::unique_ptr<MpiComm> world, Device& device);
};
const std::vector<CommInfo>& comm_registry();

// The world communicator run.comm names: MPI itself for host memory; for the cuda
// device, MPI staged through the host or NCCL. `world` must already exist (it decides
// the ranks). InputError if the comm is not compiled in.
std::unique_ptr<Comm> make_world_comm(CommKind kind, std::unique_ptr<MpiComm> world, Device& device);

}  // namespace minictx
