#include "comm/cuda/gpu_comms.hpp"

#include "comm/cuda/nccl_comm.hpp"
#include "comm/cuda/staged_mpi_comm.hpp"
#include "core/error.hpp"
#include "device/cuda/cuda_device.hpp"

namespace minictx {

std::unique_ptr<Comm> make_gpu_world_comm(const std::string& name, const MpiComm& world, Device& cuda_device) {
  auto* gpu = dynamic_cast<CudaDevice*>(&cuda_device);
  require(gpu != nullptr, "make_gpu_world_comm: not a cuda device");
  if (name == "mpi") return StagedMpiComm::over(world, gpu->stream());
  if (name == "nccl") return NcclComm::over(world, gpu->stream());
  input_error("comm '" + name + "' is not compiled into this build");
}

}  // namespace minictx
