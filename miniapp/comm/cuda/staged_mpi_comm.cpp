#include "comm/cuda/staged_mpi_comm.hpp"

#include "core/cuda/cuda_check.hpp"
#include "core/error.hpp"

namespace minictx {

StagedMpiComm::StagedMpiComm(std::unique_ptr<MpiComm> mpi, std::shared_ptr<ByteCounter> bytes,
                             cudaStream_t compute)
    : Comm(mpi->topology(), std::move(bytes)), mpi_(std::move(mpi)), compute_(compute) {
  CUDA_CHECK(cudaStreamCreateWithFlags(&copies_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&written_, cudaEventDisableTiming));
}

StagedMpiComm::~StagedMpiComm() {
  // Destructors do not throw: errors here are past the results.
  cudaStreamSynchronize(copies_);
  cudaEventDestroy(written_);
  cudaStreamDestroy(copies_);
}

std::unique_ptr<StagedMpiComm> StagedMpiComm::over(const MpiComm& world, cudaStream_t compute) {
  auto bytes = std::make_shared<ByteCounter>();
  auto mpi = std::make_unique<MpiComm>(world.handle(), world.topology(), bytes, false);
  return std::make_unique<StagedMpiComm>(std::move(mpi), bytes, compute);
}

PinnedStaging::Loan StagedMpiComm::to_host(const void* device, int64_t bytes, cudaStream_t stream) {
  PinnedStaging::Loan host = staging_.borrow(size_t(bytes));
  if (bytes == 0) return host;
  if (stream != compute_) {
    CUDA_CHECK(cudaEventRecord(written_, compute_));
    CUDA_CHECK(cudaStreamWaitEvent(stream, written_, 0));
  }
  CUDA_CHECK(cudaMemcpyAsync(host.data(), device, size_t(bytes), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

void StagedMpiComm::to_device(void* device, const PinnedStaging::Loan& host, int64_t bytes,
                              cudaStream_t stream) {
  if (bytes == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(device, host.data(), size_t(bytes), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

ShiftHandle StagedMpiComm::exchange_start(const void* send, int64_t send_bytes, int dst, void* recv,
                                          int64_t recv_bytes, int src) {
  Shift s;
  s.send = to_host(send, send_bytes, copies_);
  s.recv = staging_.borrow(size_t(recv_bytes));
  s.device_recv = recv;
  s.bytes = recv_bytes;
  const ShiftHandle h = mpi_->exchange_start(s.send.data(), send_bytes, dst, s.recv.data(), recv_bytes, src);
  shifts_[h.slot] = std::move(s);
  return h;
}

void StagedMpiComm::wait(ShiftHandle& handle) {
  const auto it = shifts_.find(handle.slot);
  require(it != shifts_.end(), "wait on a shift that was not started");
  mpi_->wait(handle);
  // copies_ already waited for the compute stream's work before this shift started, the
  // last reader of the receiving buffer; the kernel issued since may still run.
  to_device(it->second.device_recv, it->second.recv, it->second.bytes, copies_);
  shifts_.erase(it);
}

void StagedMpiComm::all_to_all(const void* send, void* recv, int64_t bytes_per_rank) {
  const int64_t bytes = bytes_per_rank * size();
  const auto s = to_host(send, bytes, compute_);
  const auto r = staging_.borrow(size_t(bytes));
  mpi_->all_to_all(s.data(), r.data(), bytes_per_rank);
  to_device(recv, r, bytes, compute_);
}

void StagedMpiComm::all_gather(const void* send, void* recv, int64_t bytes_per_rank) {
  const auto s = to_host(send, bytes_per_rank, compute_);
  const auto r = staging_.borrow(size_t(bytes_per_rank * size()));
  mpi_->all_gather(s.data(), r.data(), bytes_per_rank);
  to_device(recv, r, bytes_per_rank * size(), compute_);
}

// All the buffers go out through one host buffer with one synchronisation now, and come
// back with one in finish_sum; MPI sums them in between as the host path does, buffer by
// buffer (same calls, same bytes counted).
SumHandle StagedMpiComm::start_sum(const std::vector<ReduceBuffer>& buffers) {
  Sum sum;
  int64_t total = 0;
  for (const ReduceBuffer& b : buffers) total += b.count * element_bytes(b.type);
  sum.host = staging_.borrow(size_t(total));
  sum.on_device = buffers;
  unsigned char* at = sum.host.data();
  for (const ReduceBuffer& b : buffers) {
    const size_t bytes = size_t(b.count * element_bytes(b.type));
    CUDA_CHECK(cudaMemcpyAsync(at, b.data, bytes, cudaMemcpyDeviceToHost, compute_));
    sum.staged.push_back({at, b.count, b.type});
    at += bytes;
  }
  CUDA_CHECK(cudaStreamSynchronize(compute_));
  const SumHandle h = mpi_->all_reduce_sum_start(sum.staged);
  sums_[h.slot] = std::move(sum);
  return h;
}

void StagedMpiComm::finish_sum(SumHandle& handle) {
  const auto it = sums_.find(handle.slot);
  require(it != sums_.end(), "wait on a sum that was not started");
  mpi_->wait_sum(handle);
  const Sum& sum = it->second;
  for (size_t i = 0; i < sum.on_device.size(); ++i) {
    const ReduceBuffer& b = sum.on_device[i];
    CUDA_CHECK(cudaMemcpyAsync(b.data, sum.staged[i].data, size_t(b.count * element_bytes(b.type)),
                               cudaMemcpyHostToDevice, compute_));
  }
  CUDA_CHECK(cudaStreamSynchronize(compute_));
  sums_.erase(it);
}

void StagedMpiComm::sum_doubles(double* data, int64_t count) { mpi_->all_reduce_sum(data, count); }

void StagedMpiComm::reduce_scatter_sum(const void* send, void* recv, int64_t count_per_rank, DType type) {
  const int64_t chunk = count_per_rank * element_bytes(type);
  const auto s = to_host(send, chunk * size(), compute_);
  const auto r = staging_.borrow(size_t(chunk));
  mpi_->reduce_scatter_sum(s.data(), r.data(), count_per_rank, type);
  to_device(recv, r, chunk, compute_);
}

void StagedMpiComm::gather_doubles(const double* send, double* recv, int64_t count_per_rank) {
  mpi_->gather_doubles(send, recv, count_per_rank);
}

void StagedMpiComm::barrier() { mpi_->barrier(); }

std::unique_ptr<Comm> StagedMpiComm::split(int color, int key) {
  std::unique_ptr<Comm> sub = mpi_->split(color, key);
  std::unique_ptr<MpiComm> sub_mpi(static_cast<MpiComm*>(sub.release()));  // MpiComm::split makes an MpiComm
  return std::make_unique<StagedMpiComm>(std::move(sub_mpi), bytes_shared(), compute_);
}

}  // namespace minictx
