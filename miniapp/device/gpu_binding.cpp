#include "device/gpu_binding.hpp"

#include <map>
#include <utility>

namespace minictx {

int visible_gpu_for(int visible_gpus, int rank_here) {
  return visible_gpus <= 1 ? 0 : rank_here % visible_gpus;
}

std::string shared_gpu_refusal(const std::vector<RankGpu>& ranks) {
  std::map<std::pair<std::string, std::string>, int> first_user;  // (host, bus id) -> rank
  for (const RankGpu& r : ranks) {
    const auto [it, fresh] = first_user.emplace(std::make_pair(r.host, r.bus_id), r.rank);
    if (fresh) continue;
    return "comm nccl needs a GPU of its own per rank, but ranks " + std::to_string(it->second) + " and " +
           std::to_string(r.rank) + " both use GPU " + r.bus_id + " on " + r.host +
           "; bind one GPU per rank (--gpus-per-task=1, --gpu-bind or jobs/bind-gpu.sh), run fewer ranks per "
           "node, or share GPUs with run.comm: mpi";
  }
  return "";
}

}  // namespace minictx
