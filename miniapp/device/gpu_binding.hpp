#pragma once
#include <string>
#include <vector>

// Which GPU a rank takes, and whether the ranks' GPUs suit the comm: by the GPU's
// identity (its PCI bus id), never by counting, so that every binding a batch system
// makes works (docs/batch-jobs.md, "GPU clusters"). No CUDA here: the cuda device and the
// NCCL comm feed it what CUDA reports, the unit tests the layouts of real clusters.
namespace minictx {

// The index, among the GPUs this rank sees (CUDA_VISIBLE_DEVICES applied), of the one it
// takes: the only one when the batch system bound one (--gpus-per-task=1, --gpu-bind,
// jobs/bind-gpu.sh), else the node-local rank's, modulo their number (all of a node's
// GPUs visible to each rank; several ranks per GPU when there are fewer GPUs than ranks).
int visible_gpu_for(int visible_gpus, int rank_here);

// The GPU one rank took: its world rank, its host and the GPU's PCI bus id.
struct RankGpu {
  int rank;
  std::string host;
  std::string bus_id;
};

// "" when no two ranks share a GPU (the same bus id on the same host); else one line
// naming the first two ranks that do and the bus id: NCCL needs a GPU of its own per
// rank. Every rank that reads the same list gives the same answer.
std::string shared_gpu_refusal(const std::vector<RankGpu>& ranks);

}  // namespace minictx
