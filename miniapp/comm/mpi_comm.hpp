#pragma once
#include <mpi.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/comm.hpp"
#include "comm/transfer_rule_check.hpp"

namespace minictx {

// Comm over MPI on host memory.
class MpiComm final : public Comm {
 public:
  // Wraps `comm` (not owned when `owned` is false, e.g. MPI_COMM_WORLD).
  MpiComm(MPI_Comm comm, Topology topology, std::shared_ptr<ByteCounter> bytes, bool owned);
  ~MpiComm() override;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  // A duplicate of the world whose MPI errors return to check_mpi; ranks_per_node 0 =
  // from MPI_COMM_TYPE_SHARED.
  static std::unique_ptr<MpiComm> world(int ranks_per_node);

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int world_rank_of(int rank) const override { return world_ranks_[size_t(rank)]; }

  ShiftHandle exchange_start(const void* send, int64_t send_bytes, int dst, void* recv, int64_t recv_bytes,
                             int src) override;
  void wait(ShiftHandle& handle) override;
  void all_to_all(const void* send, void* recv, int64_t bytes_per_rank) override;
  void all_gather(const void* send, void* recv, int64_t bytes_per_rank) override;
  void reduce_scatter_sum(const void* send, void* recv, int64_t count_per_rank, DType type) override;
  void gather_doubles(const double* send, double* recv, int64_t count_per_rank) override;
  void barrier() override;
  std::unique_ptr<Comm> split(int color, int key) override;

  MPI_Comm handle() const { return comm_; }
  // The peers of a wait, for a watchdog line: a shift's (world ranks), or with dst and src
  // −1 this group's.
  std::string describe_peers(int dst, int src) const;

 private:
  SumHandle start_sum(const std::vector<ReduceBuffer>& buffers) override;
  void finish_sum(SumHandle& handle) override;
  void sum_doubles(double* data, int64_t count) override;

  MPI_Comm comm_;
  bool owned_;
  // More ranks on this node than it has cores (an emulated cluster): long waits sleep.
  bool oversubscribed_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> world_ranks_;
  std::vector<std::vector<MPI_Request>> pending_;  // by ShiftHandle slot
  std::vector<std::pair<int, int>> shift_peers_;   // (dst, src) by ShiftHandle slot
  // The transfers' rule checks (debug builds), by slot.
  std::vector<std::unique_ptr<TransferRuleCheck>> shift_checks_;
  std::vector<std::vector<std::unique_ptr<TransferRuleCheck>>> sum_checks_;
  std::vector<std::vector<MPI_Request>> sums_;  // by SumHandle slot

  // Completes n requests of `call` under the watchdog (comm/watchdog.hpp); dst and src
  // name a shift's peers, -1 a collective over this group.
  void complete(MPI_Request* reqs, int n, const char* call, int dst = -1, int src = -1) const;
};

// "MPI call failed" as one line naming the rank and the call (Error). It fires on the
// communicators of MpiComm::world, which return errors instead of aborting.
void check_mpi(int code, const char* call);

}  // namespace minictx
