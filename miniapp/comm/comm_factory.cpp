#include "comm/comm_factory.hpp"

#include "comm/watchdog.hpp"
#include "core/error.hpp"
#include "core/fault_seam.hpp"
#ifdef MINICTX_HAVE_CUDA
#include "comm/cuda/gpu_comms.hpp"
#endif

namespace minictx {
namespace {

// An MPI comm's start, bounded as NCCL's init is (NcclComm::over): every rank joins one
// barrier under the watchdog, where the test seam's comm fault comes as an NCCL init
// error would.
void start_on_every_rank(const MpiComm& world) {
  MPI_Request request;
  check_mpi(MPI_Ibarrier(world.handle(), &request), "MPI_Ibarrier");
  watchdog::Watch w;
  w.call = "MPI_Ibarrier of the comm's start";
  w.peers = [&world] { return world.describe_peers(-1, -1); };
  w.done = [&request] {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    return done != 0;
  };
  w.fault = [] {
    return fault_seam::fires(fault_seam::Stage::comm) ? fault_seam::injected("the comm could not be started")
                                                      : std::string();
  };
  watchdog::wait_to_start(w);
}

std::unique_ptr<Comm> create_mpi(std::unique_ptr<MpiComm> world, [[maybe_unused]] Device& device) {
  start_on_every_rank(*world);
#ifdef MINICTX_HAVE_CUDA
  if (device.gpu_memory()) return make_gpu_world_comm(CommKind::mpi, *world, device);
#endif
  return world;
}

#ifdef MINICTX_HAVE_CUDA
std::unique_ptr<Comm> create_nccl(std::unique_ptr<MpiComm> world, Device& device) {
  // The deck refuses nccl without run.device cuda; a caller that skips the deck gets this.
  if (!device.gpu_memory()) input_error("run.comm nccl needs run.device cuda: NCCL moves GPU memory");
  return make_gpu_world_comm(CommKind::nccl, *world, device);
}
#endif

}  // namespace

const std::vector<CommInfo>& comm_registry() {
  static const std::vector<CommInfo> comms = {
      {CommKind::mpi, create_mpi},
#ifdef MINICTX_HAVE_CUDA
      {CommKind::nccl, create_nccl},
#endif
  };
  return comms;
}

std::unique_ptr<Comm> make_world_comm(CommKind kind, std::unique_ptr<MpiComm> world, Device& device) {
  std::string available;
  for (const auto& c : comm_registry()) {
    if (c.kind == kind) return c.create(std::move(world), device);
    available += (available.empty() ? "" : ", ") + std::string(to_string(c.kind));
  }
  // Every comm but MPI comes with the cuda preset (CMakePresets.json).
  input_error("comm '" + std::string(to_string(kind)) +
              "' is not compiled into this build (available: " + available + "; build the cuda preset)");
}

}  // namespace minictx
