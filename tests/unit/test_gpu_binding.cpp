// GPU binding by identity (device/gpu_binding.hpp) over the layouts batch systems make,
// each rank's visible GPUs given as the PCI bus ids CUDA would report once
// CUDA_VISIBLE_DEVICES is applied: which GPU each rank takes, and which layouts the NCCL
// comm refuses (two ranks on one GPU), in one line naming both ranks and the bus id.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "device/gpu_binding.hpp"

using namespace minictx;

namespace {

// A node's GPUs by PCI bus id, as cudaDeviceGetPCIBusId writes them.
const std::vector<std::string> kNodeGpus = {"0000:07:00.0", "0000:0F:00.0", "0000:47:00.0", "0000:4E:00.0"};

// One rank as the job placed it: its host, its index among the job's ranks there, and
// the GPUs it sees.
struct Placed {
  std::string host;
  int rank_here;
  std::vector<std::string> visible;
};

// The GPU each rank takes, in world-rank order.
std::vector<RankGpu> take_gpus(const std::vector<Placed>& ranks) {
  std::vector<RankGpu> taken;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const Placed& p = ranks[r];
    const int index = visible_gpu_for(int(p.visible.size()), p.rank_here);
    taken.push_back({int(r), p.host, p.visible.at(size_t(index))});
  }
  return taken;
}

// `per_node` ranks on each of `nodes` hosts, rank r of a node seeing what `sees(r)` says.
template <class Sees>
std::vector<Placed> place(int nodes, int per_node, Sees sees) {
  std::vector<Placed> ranks;
  for (int n = 0; n < nodes; ++n)
    for (int r = 0; r < per_node; ++r) ranks.push_back({"node" + std::to_string(n), r, sees(r)});
  return ranks;
}

// How many ranks took each (host, bus id).
std::map<std::string, int> users(const std::vector<RankGpu>& taken) {
  std::map<std::string, int> n;
  for (const RankGpu& t : taken) ++n[t.host + " " + t.bus_id];
  return n;
}

void expect_one_gpu_each(const std::vector<RankGpu>& taken) {
  for (const auto& [gpu, n] : users(taken)) EXPECT_EQ(n, 1) << gpu;
  EXPECT_EQ(shared_gpu_refusal(taken), "");
}

}  // namespace

// sbatch --gpus-per-task=1 (the documented launch): Slurm makes one GPU visible to each
// rank, which then sees it as its device 0.
TEST(GpuBinding, OneGpuPerTaskEachRankTakesItsOwn) {
  const auto taken =
      take_gpus(place(2, 4, [](int r) { return std::vector<std::string>{kNodeGpus[size_t(r)]}; }));
  expect_one_gpu_each(taken);
  EXPECT_EQ(taken[5].bus_id, kNodeGpus[1]);
}

// --gpu-bind=map_gpu:3,2,1,0 (or closest): one GPU each, in the order Slurm chose, not
// the local rank's.
TEST(GpuBinding, GpuBindMapTakesTheBoundGpu) {
  const auto taken =
      take_gpus(place(1, 4, [](int r) { return std::vector<std::string>{kNodeGpus[size_t(3 - r)]}; }));
  expect_one_gpu_each(taken);
  EXPECT_EQ(taken[0].bus_id, kNodeGpus[3]);
}

// jobs/bind-gpu.sh narrows CUDA_VISIBLE_DEVICES from the node's GPUs to the local
// rank's: each rank sees one.
TEST(GpuBinding, BindGpuScriptNarrowsToOne) {
  const auto taken =
      take_gpus(place(2, 4, [](int r) { return std::vector<std::string>{kNodeGpus[size_t(r % 4)]}; }));
  expect_one_gpu_each(taken);
}

// --gpus-per-node=4 without a binding (PBS ngpus): every rank sees all four and takes the
// one of its node-local rank.
TEST(GpuBinding, AllGpusVisibleRankOnNodePicks) {
  const auto taken = take_gpus(place(2, 4, [](int) { return kNodeGpus; }));
  expect_one_gpu_each(taken);
  for (size_t r = 0; r < taken.size(); ++r) EXPECT_EQ(taken[r].bus_id, kNodeGpus[r % 4]) << r;
}

// --gpus-per-task=2: each rank sees two GPUs of its own and takes one of them.
TEST(GpuBinding, TwoGpusPerTaskTakesOneOfItsOwn) {
  const auto taken = take_gpus(place(1, 2, [](int r) {
    return std::vector<std::string>{kNodeGpus[size_t(2 * r)], kNodeGpus[size_t(2 * r + 1)]};
  }));
  expect_one_gpu_each(taken);
}

// Fewer GPUs than ranks (8 ranks, 4 GPUs, all visible): two ranks per GPU, which the
// staged mpi comm runs and NCCL refuses, naming the first two ranks that share one.
TEST(GpuBinding, FewerGpusThanRanksSharesEvenlyAndNcclRefuses) {
  const auto taken = take_gpus(place(1, 8, [](int) { return kNodeGpus; }));
  for (const auto& [gpu, n] : users(taken)) EXPECT_EQ(n, 2) << gpu;
  EXPECT_EQ(
      shared_gpu_refusal(taken),
      "comm nccl needs a GPU of its own per rank, but ranks 0 and 4 both use GPU 0000:07:00.0 on node0; "
      "bind one GPU per rank (--gpus-per-task=1, --gpu-bind or jobs/bind-gpu.sh), run fewer ranks per "
      "node, or share GPUs with run.comm: mpi");
}

// A machine with one GPU and two ranks (a workstation; --gpus=1 for a whole job): both
// see the same GPU.
TEST(GpuBinding, TwoRanksOnOneGpuAreRefusedInOneLine) {
  const auto taken = take_gpus(place(1, 2, [](int) { return std::vector<std::string>{kNodeGpus[0]}; }));
  const std::string refusal = shared_gpu_refusal(taken);
  EXPECT_NE(refusal.find("ranks 0 and 1 both use GPU 0000:07:00.0 on node0"), std::string::npos) << refusal;
  EXPECT_EQ(refusal.find('\n'), std::string::npos);
}

// Nodes built alike report the same bus ids: the same id on two hosts is two GPUs.
TEST(GpuBinding, SameBusIdOnTwoHostsIsNotShared) {
  const auto taken = take_gpus(place(2, 1, [](int) { return std::vector<std::string>{kNodeGpus[0]}; }));
  ASSERT_EQ(taken[0].bus_id, taken[1].bus_id);
  EXPECT_EQ(shared_gpu_refusal(taken), "");
}

// A heterogeneous node: one rank bound to a GPU of its own, the others seeing all of
// them (a job step launched beside another, a hand-written CUDA_VISIBLE_DEVICES). Bus
// ids catch what counting cannot: rank 1 takes the GPU rank 0 was bound to.
TEST(GpuBinding, HeterogeneousNodeCollisionIsFoundByBusId) {
  std::vector<Placed> ranks = place(1, 4, [](int) { return kNodeGpus; });
  ranks[0].visible = {kNodeGpus[1]};
  const auto taken = take_gpus(ranks);
  EXPECT_EQ(taken[0].bus_id, kNodeGpus[1]);
  EXPECT_EQ(taken[1].bus_id, kNodeGpus[1]);
  const std::string refusal = shared_gpu_refusal(taken);
  EXPECT_NE(refusal.find("ranks 0 and 1 both use GPU 0000:0F:00.0 on node0"), std::string::npos) << refusal;
}

// A node of two GPU models, each rank bound to one (bus ids are all that binding reads):
// every rank keeps its own.
TEST(GpuBinding, HeterogeneousNodeOfTwoModelsBoundOnePerRank) {
  const std::vector<std::string> mixed = {"0000:18:00.0", "0000:3B:00.0", "0001:86:00.0", "0001:AF:00.0"};
  const auto taken =
      take_gpus(place(1, 4, [&](int r) { return std::vector<std::string>{mixed[size_t(r)]}; }));
  expect_one_gpu_each(taken);
  EXPECT_EQ(taken[2].bus_id, "0001:86:00.0");
}
