#include "comm/cuda/gpu_comms.hpp"

#include "comm/cuda/nccl_comm.hpp"
#include "comm/cuda/staged_mpi_comm.hpp"
#include "core/error.hpp"

namespace minictx {

std::unique_ptr<Comm> make_gpu_world_comm(CommKind kind, const MpiComm& world, const Device& device) {
  cudaStream_t stream = device.gpu_stream();
  require(stream != nullptr, "make_gpu_world_comm: the device has no GPU stream");
  switch (kind) {
    case CommKind::mpi:
      return StagedMpiComm::over(world, stream);
    case CommKind::nccl:
      return NcclComm::over(world, stream);
  }
  require(false, "make_gpu_world_comm: not a comm");
  return nullptr;
}

}  // namespace minictx
