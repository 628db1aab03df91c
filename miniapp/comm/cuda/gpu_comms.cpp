#include "comm/cuda/gpu_comms.hpp"

#include "comm/cuda/nccl_comm.hpp"
#include "comm/cuda/staged_mpi_comm.hpp"
#include "core/error.hpp"
#include "device/cuda/cuda_device.hpp"

namespace minictx {

std::unique_ptr<Comm> make_gpu_world_comm(CommKind kind, const MpiComm& world, Device& cuda_device) {
  auto* gpu = dynamic_cast<CudaDevice*>(&cuda_device);
  require(gpu != nullptr, "make_gpu_world_comm: not a cuda device");
  switch (kind) {
    case CommKind::mpi:
      return StagedMpiComm::over(world, gpu->stream());
    case CommKind::nccl:
      return NcclComm::over(world, gpu->stream());
  }
  require(false, "make_gpu_world_comm: not a comm");
  return nullptr;
}

}  // namespace minictx
