#include "comm/comm_factory.hpp"

#include "core/error.hpp"
#ifdef MINICTX_HAVE_CUDA
#include "comm/cuda/gpu_comms.hpp"
#endif

namespace minictx {

std::vector<std::string> comm_names() {
#ifdef MINICTX_HAVE_CUDA
  return {"mpi", "nccl"};
#else
  return {"mpi"};
#endif
}

std::unique_ptr<Comm> make_world_comm(const std::string& name, std::unique_ptr<MpiComm> world,
                                      [[maybe_unused]] Device& device) {
#ifdef MINICTX_HAVE_CUDA
  if (device.name() == "cuda") return make_gpu_world_comm(name, *world, device);
#endif
  if (name == "mpi") return world;
  if (name == "nccl") {
#ifndef MINICTX_HAVE_CUDA
    input_error("comm 'nccl' is not compiled into this build (available: mpi; build the cuda preset)");
#endif
    input_error("run.comm nccl needs run.device cuda: NCCL moves GPU memory");
  }
  input_error("comm '" + name + "' is not compiled into this build");
}

}  // namespace minictx
