#pragma once
#include <memory>
#include <string>

#include "comm/mpi_comm.hpp"
#include "device/device.hpp"

namespace minictx {

// The world communicator for a device whose tensors live in GPU memory: "mpi" (staged
// through the host) or "nccl", both on the device's stream (Device::gpu_stream).
std::unique_ptr<Comm> make_gpu_world_comm(CommKind kind, const MpiComm& world, const Device& device);

}  // namespace minictx
