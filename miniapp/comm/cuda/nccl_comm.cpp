#include "comm/cuda/nccl_comm.hpp"

#include "core/cuda/cuda_check.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

ncclDataType_t nccl_type(DType type) {
  return type == DType::bf16 ? ncclBfloat16 : type == DType::f16 ? ncclFloat16 : ncclFloat;
}

}  // namespace

void check_nccl(ncclResult_t code, const char* call) {
  if (code == ncclSuccess) return;
  fail(cuda::rank_label() + ": " + call + " failed: " + ncclGetErrorString(code));
}

NcclComm::NcclComm(std::unique_ptr<MpiComm> mpi, std::shared_ptr<ByteCounter> bytes, ncclComm_t nccl,
                   cudaStream_t compute)
    : Comm(mpi->topology(), std::move(bytes)), mpi_(std::move(mpi)), nccl_(nccl), compute_(compute) {
  CUDA_CHECK(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
}

NcclComm::~NcclComm() {
  cudaStreamSynchronize(comm_stream_);
  ncclCommDestroy(nccl_);
  for (cudaEvent_t e : done_) cudaEventDestroy(e);
  cudaEventDestroy(ready_);
  cudaStreamDestroy(comm_stream_);
}

std::unique_ptr<NcclComm> NcclComm::over(const MpiComm& world, cudaStream_t compute) {
  // NCCL needs a GPU of its own per rank; every rank of the node sees the same counts,
  // so they all fail together here instead of hanging in ncclCommInitRank.
  const int local_ranks = world.topology().ranks_here;
  int gpus = 0;
  CUDA_CHECK(cudaGetDeviceCount(&gpus));
  if (local_ranks > gpus)
    input_error(cuda::rank_label() + ": comm nccl needs one GPU per rank: " + std::to_string(local_ranks) +
                " ranks share this node's " + std::to_string(gpus) +
                " GPU(s); use fewer ranks per node or run.comm: mpi");

  auto bytes = std::make_shared<ByteCounter>();
  auto mpi = std::make_unique<MpiComm>(world.handle(), world.topology(), bytes, false);
  ncclUniqueId id;
  if (mpi->rank() == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  check_mpi(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi->handle()), "MPI_Bcast");
  ncclComm_t nccl = nullptr;
  NCCL_CHECK(ncclCommInitRank(&nccl, mpi->size(), id, mpi->rank()));
  return std::make_unique<NcclComm>(std::move(mpi), bytes, nccl, compute);
}

size_t NcclComm::begin_on_comm_stream() {
  size_t slot = 0;
  while (slot < busy_.size() && busy_[slot]) ++slot;
  if (slot == busy_.size()) {
    cudaEvent_t e;
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    done_.push_back(e);
    busy_.push_back(false);
  }
  CUDA_CHECK(cudaEventRecord(ready_, compute_));
  CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, ready_, 0));
  return slot;
}

void NcclComm::end_on_comm_stream(size_t slot) {
  CUDA_CHECK(cudaEventRecord(done_[slot], comm_stream_));
  busy_[slot] = true;
}

void NcclComm::join_comm_stream(int slot) {
  require(slot >= 0 && size_t(slot) < busy_.size() && busy_[size_t(slot)],
          "wait on a transfer that was not started");
  CUDA_CHECK(cudaStreamWaitEvent(compute_, done_[size_t(slot)], 0));
  busy_[size_t(slot)] = false;
}

ShiftHandle NcclComm::shift_start(const void* send, void* recv, int64_t bytes, int dst, int src) {
  const size_t slot = begin_on_comm_stream();
  NCCL_CHECK(ncclGroupStart());
  NCCL_CHECK(ncclSend(send, size_t(bytes), ncclUint8, dst, nccl_, comm_stream_));
  NCCL_CHECK(ncclRecv(recv, size_t(bytes), ncclUint8, src, nccl_, comm_stream_));
  NCCL_CHECK(ncclGroupEnd());
  end_on_comm_stream(slot);
  count_sent(dst, double(bytes));
  return {int(slot)};
}

void NcclComm::wait(ShiftHandle& handle) {
  join_comm_stream(handle.slot);
  handle.slot = -1;
}

void NcclComm::all_to_all(const void* send, void* recv, int64_t bytes_per_rank) {
  const size_t n = size_t(bytes_per_rank);
  NCCL_CHECK(ncclGroupStart());
  for (int p = 0; p < size(); ++p) {
    NCCL_CHECK(ncclSend(static_cast<const char*>(send) + size_t(p) * n, n, ncclUint8, p, nccl_, compute_));
    NCCL_CHECK(ncclRecv(static_cast<char*>(recv) + size_t(p) * n, n, ncclUint8, p, nccl_, compute_));
  }
  NCCL_CHECK(ncclGroupEnd());
  count_to_all_peers(double(bytes_per_rank));
}

void NcclComm::all_gather(const void* send, void* recv, int64_t bytes_per_rank) {
  NCCL_CHECK(ncclAllGather(send, recv, size_t(bytes_per_rank), ncclUint8, nccl_, compute_));
  count_to_all_peers(double(bytes_per_rank));
}

// On the device, in place, on the comm stream: nothing goes through the host. One NCCL
// group for all the buffers, which NCCL fuses into one launch. Counted as MpiComm counts
// them: the bandwidth-optimal ring's 2(P−1)/P of each buffer.
SumHandle NcclComm::start_sum(const std::vector<ReduceBuffer>& buffers) {
  const size_t slot = begin_on_comm_stream();
  NCCL_CHECK(ncclGroupStart());
  for (const ReduceBuffer& b : buffers) {
    NCCL_CHECK(
        ncclAllReduce(b.data, b.data, size_t(b.count), nccl_type(b.type), ncclSum, nccl_, comm_stream_));
    count_to_all_peers(2.0 * double(b.count) * double(element_bytes(b.type)) / size());
  }
  NCCL_CHECK(ncclGroupEnd());
  end_on_comm_stream(slot);
  return {int(slot)};
}

void NcclComm::finish_sum(SumHandle& handle) { join_comm_stream(handle.slot); }

void NcclComm::sum_doubles(double* data, int64_t count) { mpi_->all_reduce_sum(data, count); }

void NcclComm::reduce_scatter_sum(const void* send, void* recv, int64_t count_per_rank, DType type) {
  NCCL_CHECK(
      ncclReduceScatter(send, recv, size_t(count_per_rank), nccl_type(type), ncclSum, nccl_, compute_));
  count_to_all_peers(double(count_per_rank) * double(element_bytes(type)));
}

void NcclComm::gather_doubles(const double* send, double* recv, int64_t count_per_rank) {
  mpi_->gather_doubles(send, recv, count_per_rank);
}

void NcclComm::barrier() { mpi_->barrier(); }

std::unique_ptr<Comm> NcclComm::split(int color, int key) {
  std::unique_ptr<Comm> sub = mpi_->split(color, key);
  std::unique_ptr<MpiComm> sub_mpi(static_cast<MpiComm*>(sub.release()));  // MpiComm::split makes an MpiComm
  ncclComm_t sub_nccl = nullptr;
  NCCL_CHECK(ncclCommSplit(nccl_, color, key, &sub_nccl, nullptr));
  return std::make_unique<NcclComm>(std::move(sub_mpi), bytes_shared(), sub_nccl, compute_);
}

}  // namespace minictx
