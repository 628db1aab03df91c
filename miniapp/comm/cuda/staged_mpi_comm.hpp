#pragma once
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <vector>

#include "comm/cuda/pinned_staging.hpp"
#include "comm/mpi_comm.hpp"

namespace minictx {

// MPI on GPU buffers, staged through host memory: the second transport of the cuda
// device, for several ranks on one GPU (NCCL refuses that) and for MPI libraries that
// are not CUDA-aware. Data goes through page-locked buffers kept for the comm's lifetime
// (PinnedStaging): copied out once the work queued so far has written it, copied back
// before the call returns. A ring shift copies on a stream of its own, ordered after the
// compute stream by an event, so that the copy back runs beside the kernel the caller
// issued between shift_start and wait instead of after it; the blocking collectives copy
// on the compute stream. The byte counts are the wrapped MpiComm's. Double buffers (loss,
// timings) are host bookkeeping and go straight to MPI.
class StagedMpiComm final : public Comm {
 public:
  StagedMpiComm(std::unique_ptr<MpiComm> mpi, std::shared_ptr<ByteCounter> bytes, cudaStream_t compute);
  ~StagedMpiComm() override;
  StagedMpiComm(const StagedMpiComm&) = delete;
  StagedMpiComm& operator=(const StagedMpiComm&) = delete;
  // The world: an MpiComm over MPI_COMM_WORLD with the topology of `world`.
  static std::unique_ptr<StagedMpiComm> over(const MpiComm& world, cudaStream_t compute);

  std::string name() const override { return "mpi"; }
  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  int world_rank_of(int rank) const override { return mpi_->world_rank_of(rank); }

  ShiftHandle exchange_start(const void* send, int64_t send_bytes, int dst, void* recv, int64_t recv_bytes,
                             int src) override;
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
  void sum_doubles(double* data, int64_t count) override;

  struct Shift {
    PinnedStaging::Loan send, recv;
    void* device_recv = nullptr;
    int64_t bytes = 0;
  };
  struct Sum {
    PinnedStaging::Loan host;                     // every buffer, back to back
    std::vector<ReduceBuffer> staged, on_device;  // the same buffers in host and device memory
  };
  // Copies on `stream` (the compute stream, or copies_ after the compute stream's work
  // so far) and waits for the copy alone.
  PinnedStaging::Loan to_host(const void* device, int64_t bytes, cudaStream_t stream);
  void to_device(void* device, const PinnedStaging::Loan& host, int64_t bytes, cudaStream_t stream);
  std::unique_ptr<MpiComm> mpi_;
  cudaStream_t compute_;
  cudaStream_t copies_ = nullptr;  // the ring shifts' copies
  cudaEvent_t written_ = nullptr;  // the compute stream's work so far, for copies_ to wait on
  PinnedStaging staging_;          // declared before the transfers that borrow from it
  std::map<int, Shift> shifts_;    // by the MpiComm's shift slot
  std::map<int, Sum> sums_;        // by the MpiComm's sum slot
};

}  // namespace minictx
