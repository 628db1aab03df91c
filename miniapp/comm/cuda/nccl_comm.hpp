#pragma once
#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>
#include <vector>

#include "comm/mpi_comm.hpp"

namespace minictx {

// Comm over NCCL on GPU buffers, one GPU per rank, bootstrapped over MPI (rank 0's
// ncclUniqueId is broadcast). Ring shifts are grouped ncclSend/ncclRecv on a comm stream
// that waits for the compute stream, and wait() makes the compute stream wait for the
// transfer: the block compute issued in between overlaps it. Collectives run on the
// compute stream, except started sums (all_reduce_sum_start), which run on the comm
// stream like a shift, so the compute issued before wait_sum overlaps them. Byte counts
// follow MpiComm's conventions exactly; double buffers (loss, timings) are host
// bookkeeping and go through the MPI communicator of the same group.
class NcclComm final : public Comm {
 public:
  NcclComm(std::unique_ptr<MpiComm> mpi, std::shared_ptr<ByteCounter> bytes, ncclComm_t nccl,
           cudaStream_t compute);
  ~NcclComm() override;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  // The world over `world`'s ranks; fails on every rank of a node when the node has
  // fewer GPUs than ranks.
  static std::unique_ptr<NcclComm> over(const MpiComm& world, cudaStream_t compute);

  std::string name() const override { return "nccl"; }
  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  int world_rank_of(int rank) const override { return mpi_->world_rank_of(rank); }

  ShiftHandle shift_start(const void* send, void* recv, int64_t bytes, int dst, int src) override;
  void wait(ShiftHandle& handle) override;
  void all_to_all(const void* send, void* recv, int64_t bytes_per_rank) override;
  void all_gather(const void* send, void* recv, int64_t bytes_per_rank) override;
  void reduce_scatter_sum(const void* send, void* recv, int64_t count_per_rank, DType type) override;
  void gather_doubles(const double* send, double* recv, int64_t count_per_rank) override;
  void barrier() override;
  std::unique_ptr<Comm> split(int color, int key) override;

 private:
  SumHandle start_sum(const std::vector<ReduceBuffer>& buffers) override;
  void finish_sum(SumHandle& handle) override;
  // A free slot of done_/busy_, after the compute stream's work so far is queued before
  // anything the caller then puts on the comm stream.
  size_t begin_on_comm_stream();
  // Marks the end of what the caller put on the comm stream for `slot`.
  void end_on_comm_stream(size_t slot);
  // The compute stream waits for `slot`'s work; the slot is free again.
  void join_comm_stream(int slot);
  void sum_doubles(double* data, int64_t count) override;

  std::unique_ptr<MpiComm> mpi_;
  ncclComm_t nccl_;
  cudaStream_t compute_;
  cudaStream_t comm_stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;    // compute work the next shift must wait for
  std::vector<cudaEvent_t> done_;  // by slot (a shift's or a started sum's)
  std::vector<bool> busy_;
};

// "NCCL call failed" as one line naming the rank and the call.
void check_nccl(ncclResult_t code, const char* call);

}  // namespace minictx

#define NCCL_CHECK(call) ::minictx::check_nccl((call), #call)
