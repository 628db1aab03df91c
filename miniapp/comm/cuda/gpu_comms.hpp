#pragma once
#include <memory>
#include <string>

#include "comm/mpi_comm.hpp"
#include "device/device.hpp"

namespace minictx {

// The world communicator for the cuda device: "mpi" (staged through the host) or
// "nccl", both on the device's compute stream.
std::unique_ptr<Comm> make_gpu_world_comm(CommKind kind, const MpiComm& world, Device& cuda_device);

}  // namespace minictx
