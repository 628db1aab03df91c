#include "comm/cuda/nccl_comm.hpp"

#include <chrono>
#include <exception>
#include <future>
#include <thread>

#include "comm/rank_gpus.hpp"
#include "comm/watchdog.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/spin_kernel.hpp"
#include "core/error.hpp"
#include "core/fault_seam.hpp"
#include "device/gpu_binding.hpp"

namespace minictx {
namespace {

// How long ending a job or a communicator waits for ncclCommAbort.
constexpr double kAbortSeconds = 5;

ncclDataType_t nccl_type(DType type) {
  return type == DType::bf16 ? ncclBfloat16 : type == DType::f16 ? ncclFloat16 : ncclFloat;
}

// ncclCommAbort on a thread of its own, waited for kAbortSeconds at most: an abort that
// itself waits on the GPU (behind a kernel that never ends) must not keep the job from
// ending. Past that the communicator is left to the process's exit.
void abort_within_seconds(ncclComm_t nccl) {
  if (nccl == nullptr) return;
  auto aborted = std::make_shared<std::promise<void>>();
  std::future<void> done = aborted->get_future();
  std::thread([nccl, aborted] {
    ncclCommAbort(nccl);
    aborted->set_value();
  }).detach();
  done.wait_for(std::chrono::duration<double>(kAbortSeconds));
}

// A non-blocking communicator's state: ncclInProgress while its last call runs. A failed
// query (no communicator yet, one NCCL does not know) is the state, so that no wait on it
// polls for ever.
ncclResult_t async_state(ncclComm_t nccl) {
  if (nccl == nullptr) return ncclInvalidArgument;
  ncclResult_t state = ncclSuccess;
  const ncclResult_t got = ncclCommGetAsyncError(nccl, &state);
  return got != ncclSuccess ? got : state;
}

std::string nccl_error(ncclResult_t code, ncclComm_t comm) {
  std::string what = ncclGetErrorString(code);
  const char* last = comm != nullptr ? ncclGetLastError(comm) : nullptr;
  if (last != nullptr && *last != '\0') what += std::string(" (") + last + ")";
  return what;
}

// Refused on every rank alike when two ranks would share a GPU: each rank's GPU is the
// current device, which the cuda device chose. A rank that cannot read its bus id still
// joins the all-gather, then every rank fails.
void refuse_shared_gpus(const MpiComm& world) {
  int device = -1;
  char bus_id[64] = {};
  std::string error;
  cudaError_t code = cudaGetDevice(&device);
  if (code == cudaSuccess) code = cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device);
  if (code != cudaSuccess)
    error = cuda::rank_label() + ": cannot read its GPU's PCI bus id: " + cudaGetErrorString(code);
  const std::vector<RankGpu> ranks = gather_rank_gpus(world, code == cudaSuccess ? bus_id : "");
  for (const RankGpu& r : ranks)
    if (r.bus_id.empty())
      fail(error.empty() ? "rank " + std::to_string(r.rank) + " cannot read its GPU's PCI bus id" : error);
  const std::string refusal = shared_gpu_refusal(ranks);
  if (!refusal.empty()) input_error(refusal);
}

// Rank 0's ncclUniqueId on every rank, or rank 0's failure to make one on every rank.
ncclUniqueId shared_unique_id(const MpiComm& world) {
  struct {
    ncclUniqueId id;
    int code;
  } shared{};
  if (world.rank() == 0) shared.code = ncclGetUniqueId(&shared.id);
  check_mpi(MPI_Bcast(&shared, sizeof shared, MPI_BYTE, 0, world.handle()), "MPI_Bcast");
  if (shared.code != ncclSuccess)
    fail("rank " + std::to_string(world.world_rank_of(0)) +
         ": ncclGetUniqueId failed: " + ncclGetErrorString(ncclResult_t(shared.code)));
  return shared.id;
}

// ncclCommInitRank on a non-blocking communicator, waited for under the watchdog's limit.
// A rank whose init fails (or the test seam's comm fault) aborts its part, and the
// others' init never completes: they give up at the limit with WaitedForOthers, or
// earlier when NCCL reports the peer's failure (ncclRemoteError), and the start-up's
// agreement names the failure, not their wait.
ncclComm_t init_rank(const MpiComm& world, const ncclUniqueId& id) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t nccl = nullptr;
  ncclResult_t state = ncclCommInitRankConfig(&nccl, world.size(), id, world.rank(), &config);
  watchdog::Watch w;
  w.call = "ncclCommInitRank";
  w.peers = [&world] { return world.describe_peers(-1, -1); };
  w.done = [&] {
    if (state == ncclInProgress) state = async_state(nccl);
    return state != ncclInProgress;
  };
  w.fault = [] {
    return fault_seam::fires(fault_seam::Stage::comm) ? fault_seam::injected("NCCL reported an error")
                                                      : std::string();
  };
  w.abandon = [&nccl] {
    abort_within_seconds(nccl);
    nccl = nullptr;
  };
  watchdog::wait_to_start(w);
  if (state == ncclSuccess) return nccl;
  const std::string what = cuda::rank_label() + ": ncclCommInitRank failed: " + nccl_error(state, nccl);
  abort_within_seconds(nccl);
  if (state == ncclRemoteError) throw watchdog::WaitedForOthers(what);
  fail(what);
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
  CUDA_CHECK(cudaEventCreateWithFlags(&collected_, cudaEventDisableTiming));
}

// Destructors do not throw. The host saw every operation complete, so nothing is
// synchronized here: CUDA frees the streams and events once their work is done.
NcclComm::~NcclComm() {
  // Torn down by an exception, the peers may be anywhere: abort, never wait for them.
  if (broken_ || std::uncaught_exceptions() > 0 || !quiesce())
    abandon();
  else
    ncclCommDestroy(nccl_);
  for (cudaEvent_t e : done_) cudaEventDestroy(e);
  cudaEventDestroy(collected_);
  cudaEventDestroy(ready_);
  cudaStreamDestroy(comm_stream_);
}

std::unique_ptr<NcclComm> NcclComm::over(const MpiComm& world, cudaStream_t compute) {
  refuse_shared_gpus(world);
  auto bytes = std::make_shared<ByteCounter>();
  return started(std::make_unique<MpiComm>(world.handle(), world.topology(), bytes, false), bytes, compute);
}

std::unique_ptr<NcclComm> NcclComm::started(std::unique_ptr<MpiComm> mpi, std::shared_ptr<ByteCounter> bytes,
                                            cudaStream_t compute) {
  const ncclUniqueId id = shared_unique_id(*mpi);
  const ncclComm_t nccl = init_rank(*mpi, id);
  return std::make_unique<NcclComm>(std::move(mpi), std::move(bytes), nccl, compute);
}

int NcclComm::cuda_device() const {
  int device = -1;
  check_nccl(ncclCommCuDevice(nccl_, &device), "ncclCommCuDevice");
  return device;
}

std::string NcclComm::fault() const {
  const ncclResult_t state = async_state(nccl_);
  if (state != ncclSuccess && state != ncclInProgress) return "NCCL error " + nccl_error(state, nccl_);
  return "";
}

void NcclComm::abandon() {
  if (broken_) return;
  broken_ = true;
  abort_within_seconds(nccl_);
}

bool NcclComm::quiesce() {
  ncclResult_t state = ncclCommFinalize(nccl_);
  watchdog::Watch w;
  w.call = "ncclCommFinalize";
  w.peers = [this] { return mpi_->describe_peers(-1, -1); };
  w.done = [&] {
    if (state == ncclInProgress) state = async_state(nccl_);
    return state != ncclInProgress;
  };
  try {
    watchdog::wait_to_start(w);
  } catch (const Error&) {
    return false;
  }
  return state == ncclSuccess;
}

void NcclComm::issued(ncclResult_t code, const char* call) {
  if (code == ncclSuccess) return;
  watchdog::Watch w;
  w.call = call;
  w.peers = [this] { return mpi_->describe_peers(-1, -1); };
  if (code == ncclInProgress) {
    w.done = [&] {
      code = async_state(nccl_);
      return code != ncclInProgress;
    };
    w.abandon = [this] { abandon(); };
    watchdog::wait(w);
  }
  if (code == ncclSuccess) return;
  const std::string reason = "NCCL error " + nccl_error(code, nccl_);
  abandon();
  watchdog::abort_on_fault(w, reason);
}

void NcclComm::await(cudaEvent_t event, const char* call, int dst, int src) {
  watchdog::Watch w;
  w.call = call;
  w.peers = [this, dst, src] { return mpi_->describe_peers(dst, src); };
  w.done = [event] {
    const cudaError_t code = cudaEventQuery(event);
    if (code == cudaErrorNotReady) return false;
    cuda::check(code, "cudaEventQuery");
    return true;
  };
  w.fault = [this] {
    std::string f = fault();
    if (f.empty() && fault_seam::fires(fault_seam::Stage::shift))
      f = fault_seam::injected("NCCL reported an error");
    return f;
  };
  w.abandon = [this] { abandon(); };
  watchdog::wait(w);
}

void NcclComm::stall_if_injected() {
  if (fault_seam::fires(fault_seam::Stage::stall)) cuda::spin(compute_, -1);
}

size_t NcclComm::begin_on_comm_stream() {
  stall_if_injected();
  size_t slot = 0;
  while (slot < busy_.size() && busy_[slot]) ++slot;
  if (slot == busy_.size()) {
    cudaEvent_t e;
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    done_.push_back(e);
    busy_.push_back(false);
    peers_.emplace_back(-1, -1);
  }
  CUDA_CHECK(cudaEventRecord(ready_, compute_));
  CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, ready_, 0));
  return slot;
}

void NcclComm::end_on_comm_stream(size_t slot, int dst, int src) {
  CUDA_CHECK(cudaEventRecord(done_[slot], comm_stream_));
  busy_[slot] = true;
  peers_[slot] = {dst, src};
}

// The host saw the slot's work complete: what the compute stream queues next runs after it.
void NcclComm::join_comm_stream(int slot, const char* call) {
  require(slot >= 0 && size_t(slot) < busy_.size() && busy_[size_t(slot)],
          "wait on a transfer that was not started");
  const auto [dst, src] = peers_[size_t(slot)];
  await(done_[size_t(slot)], call, dst, src);
  busy_[size_t(slot)] = false;
}

ShiftHandle NcclComm::exchange_start(const void* send, int64_t send_bytes, int dst, void* recv,
                                     int64_t recv_bytes, int src) {
  const size_t slot = begin_on_comm_stream();
  issued(ncclGroupStart(), "ncclGroupStart");
  if (send_bytes > 0)
    issued(ncclSend(send, size_t(send_bytes), ncclUint8, dst, nccl_, comm_stream_), "ncclSend");
  if (recv_bytes > 0)
    issued(ncclRecv(recv, size_t(recv_bytes), ncclUint8, src, nccl_, comm_stream_), "ncclRecv");
  issued(ncclGroupEnd(), "ncclSend/ncclRecv of a ring shift");
  end_on_comm_stream(slot, dst, src);
  if (send_bytes > 0) count_sent(dst, double(send_bytes));
  return {int(slot)};
}

void NcclComm::wait(ShiftHandle& handle) {
  join_comm_stream(handle.slot, "ncclSend/ncclRecv of a ring shift");
  handle.slot = -1;
}

void NcclComm::all_to_all(const void* send, void* recv, int64_t bytes_per_rank) {
  stall_if_injected();
  const size_t n = size_t(bytes_per_rank);
  issued(ncclGroupStart(), "ncclGroupStart");
  for (int p = 0; p < size(); ++p) {
    issued(ncclSend(static_cast<const char*>(send) + size_t(p) * n, n, ncclUint8, p, nccl_, compute_),
           "ncclSend");
    issued(ncclRecv(static_cast<char*>(recv) + size_t(p) * n, n, ncclUint8, p, nccl_, compute_), "ncclRecv");
  }
  issued(ncclGroupEnd(), "ncclSend/ncclRecv of an all-to-all");
  CUDA_CHECK(cudaEventRecord(collected_, compute_));
  await(collected_, "ncclSend/ncclRecv of an all-to-all");
  count_to_all_peers(double(bytes_per_rank));
}

void NcclComm::all_gather(const void* send, void* recv, int64_t bytes_per_rank) {
  stall_if_injected();
  issued(ncclAllGather(send, recv, size_t(bytes_per_rank), ncclUint8, nccl_, compute_), "ncclAllGather");
  CUDA_CHECK(cudaEventRecord(collected_, compute_));
  await(collected_, "ncclAllGather");
  count_to_all_peers(double(bytes_per_rank));
}

// On the device, in place, on the comm stream: nothing goes through the host. One NCCL
// group for all the buffers, which NCCL fuses into one launch. Counted as MpiComm counts
// them: the bandwidth-optimal ring's 2(P−1)/P of each buffer.
SumHandle NcclComm::start_sum(const std::vector<ReduceBuffer>& buffers) {
  const size_t slot = begin_on_comm_stream();
  issued(ncclGroupStart(), "ncclGroupStart");
  for (const ReduceBuffer& b : buffers) {
    issued(ncclAllReduce(b.data, b.data, size_t(b.count), nccl_type(b.type), ncclSum, nccl_, comm_stream_),
           "ncclAllReduce");
    count_to_all_peers(2.0 * double(b.count) * double(element_bytes(b.type)) / size());
  }
  issued(ncclGroupEnd(), "ncclAllReduce of a started sum");
  end_on_comm_stream(slot, -1, -1);
  return {int(slot)};
}

void NcclComm::finish_sum(SumHandle& handle) {
  join_comm_stream(handle.slot, "ncclAllReduce of a started sum");
}

void NcclComm::sum_doubles(double* data, int64_t count) { mpi_->all_reduce_sum(data, count); }

void NcclComm::reduce_scatter_sum(const void* send, void* recv, int64_t count_per_rank, DType type) {
  stall_if_injected();
  issued(ncclReduceScatter(send, recv, size_t(count_per_rank), nccl_type(type), ncclSum, nccl_, compute_),
         "ncclReduceScatter");
  CUDA_CHECK(cudaEventRecord(collected_, compute_));
  await(collected_, "ncclReduceScatter");
  count_to_all_peers(double(count_per_rank) * double(element_bytes(type)));
}

void NcclComm::gather_doubles(const double* send, double* recv, int64_t count_per_rank) {
  mpi_->gather_doubles(send, recv, count_per_rank);
}

void NcclComm::barrier() { mpi_->barrier(); }

// A sub-group's communicator is started as the world's is, ncclCommInitRank over its
// ranks, not by ncclCommSplit: a non-blocking split fills in the new communicator only
// once the parent's state leaves ncclInProgress (NCCL's semantics for it differ between
// versions), and a non-blocking split of a one-rank communicator has been seen never to
// complete.
std::unique_ptr<Comm> NcclComm::split(int color, int key) {
  std::unique_ptr<Comm> sub = mpi_->split(color, key);
  std::unique_ptr<MpiComm> sub_mpi(static_cast<MpiComm*>(sub.release()));  // MpiComm::split makes an MpiComm
  return started(std::move(sub_mpi), bytes_shared(), compute_);
}

}  // namespace minictx
