#pragma once
#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>
#include <string>
#include <utility>
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
//
// Failures end the job, never hang it. The communicators are non-blocking: the host
// waits for every NCCL operation under the watchdog (comm/watchdog.hpp) before the call
// that completes it returns (wait, wait_sum, the collectives), polling NCCL's
// asynchronous error, so no later CUDA call blocks on NCCL work not known to be done. An
// NCCL error, or a wait past run.watchdog_seconds, aborts the communicator
// (ncclCommAbort), prints one line naming the rank, the operation and the point, and
// aborts the job. Teardown finalizes under the same limit and aborts a communicator that
// is broken or does not quiesce, instead of blocking in ncclCommDestroy.
class NcclComm final : public Comm {
 public:
  NcclComm(std::unique_ptr<MpiComm> mpi, std::shared_ptr<ByteCounter> bytes, ncclComm_t nccl,
           cudaStream_t compute);
  ~NcclComm() override;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  // The world over `world`'s ranks on the current CUDA device (the cuda device's GPU). In
  // agreed steps, on every rank alike: refused when two ranks would share a GPU (by PCI
  // bus id, device/gpu_binding.hpp); rank 0's ncclUniqueId failure reaches every rank;
  // ncclCommInitRank waits under the watchdog's limit, and a rank that waited for others
  // that failed throws watchdog::WaitedForOthers.
  static std::unique_ptr<NcclComm> over(const MpiComm& world, cudaStream_t compute);

  std::string name() const override { return "nccl"; }
  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  int world_rank_of(int rank) const override { return mpi_->world_rank_of(rank); }
  // The CUDA device NCCL runs on (ncclCommCuDevice).
  int cuda_device() const;

  ShiftHandle exchange_start(const void* send, int64_t send_bytes, int dst, void* recv, int64_t recv_bytes,
                             int src) override;
  void wait(ShiftHandle& handle) override;
  void all_to_all(const void* send, void* recv, int64_t bytes_per_rank) override;
  void all_gather(const void* send, void* recv, int64_t bytes_per_rank) override;
  void reduce_scatter_sum(const void* send, void* recv, int64_t count_per_rank, DType type) override;
  void gather_doubles(const double* send, double* recv, int64_t count_per_rank) override;
  void barrier() override;
  std::unique_ptr<Comm> split(int color, int key) override;

  // Public for the one-GPU tests: Comm skips the sums of a group of one, which would
  // then put no byte through NCCL.
  SumHandle start_sum(const std::vector<ReduceBuffer>& buffers) override;
  void finish_sum(SumHandle& handle) override;

 private:
  // The communicator over `mpi`'s ranks: rank 0's ncclUniqueId shared over MPI, then
  // ncclCommInitRank under the watchdog's limit (over and split).
  static std::unique_ptr<NcclComm> started(std::unique_ptr<MpiComm> mpi, std::shared_ptr<ByteCounter> bytes,
                                           cudaStream_t compute);
  // A free slot of done_/busy_, after the compute stream's work so far is queued before
  // anything the caller then puts on the comm stream.
  size_t begin_on_comm_stream();
  // Marks the end of what the caller put on the comm stream for `slot`, a transfer
  // between dst and src (−1: the group).
  void end_on_comm_stream(size_t slot, int dst, int src);
  // Waits on the host for `slot`'s work (await), then the compute stream waits for it;
  // the slot is free again.
  void join_comm_stream(int slot, const char* call);
  void sum_doubles(double* data, int64_t count) override;

  // An NCCL call's result: errors abandon the communicator and throw; ncclInProgress (a
  // non-blocking communicator still queuing the call) is waited out under the watchdog.
  void issued(ncclResult_t code, const char* call);
  // Waits on the host, under the watchdog, until `event` completes; NCCL's asynchronous
  // error or the test seam's shift fault (on any operation: one rank has no shift)
  // meanwhile ends the job.
  void await(cudaEvent_t event, const char* call, int dst = -1, int src = -1);
  // The test seam's stall: a kernel that never ends, queued before this operation.
  void stall_if_injected();
  // NCCL's asynchronous error, or the test seam's, as a line's reason; "" if none.
  std::string fault() const;
  // ncclCommAbort, once and within seconds: the communicator is broken.
  void abandon();
  // ncclCommFinalize until NCCL says the communicator is quiescent, within the
  // watchdog's limit: whether it did.
  bool quiesce();

  std::unique_ptr<MpiComm> mpi_;
  ncclComm_t nccl_;
  cudaStream_t compute_;
  cudaStream_t comm_stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;      // compute work the next shift must wait for
  cudaEvent_t collected_ = nullptr;  // the last collective on the compute stream
  std::vector<cudaEvent_t> done_;    // by slot (a shift's or a started sum's)
  std::vector<bool> busy_;
  std::vector<std::pair<int, int>> peers_;  // (dst, src) by slot, −1 for a sum
  bool broken_ = false;
};

// "NCCL call failed" as one line naming the rank and the call.
void check_nccl(ncclResult_t code, const char* call);

}  // namespace minictx
