#pragma once
#include <string>
#include <vector>

#include "comm/mpi_comm.hpp"
#include "device/gpu_binding.hpp"

namespace minictx {

// Every rank's GPU, by host and PCI bus id, on every rank of `world` (one all-gather):
// what shared_gpu_refusal reads. Collective; throws only where every rank does.
std::vector<RankGpu> gather_rank_gpus(const MpiComm& world, const std::string& bus_id);

}  // namespace minictx
