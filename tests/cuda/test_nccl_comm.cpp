// The NCCL comm on one GPU (label gpu: needs one, run by ci/gpu-check.sh's nccl stage):
// a one-rank communicator puts bytes through NCCL for every kind of transfer the
// backends use (a shift to itself, all-gather, reduce-scatter, all-to-all and the
// started gradient sum, which Comm skips on one rank), each reading a buffer that a
// deliberately slow kernel's successor writes on the compute stream: a transfer that did
// not wait for the compute stream would send what was there before, and the result
// would not be the host's.
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <vector>

#include "comm/cuda/nccl_comm.hpp"
#include "config/run_config.hpp"
#include "core/cuda/spin_kernel.hpp"
#include "device/cuda/cuda_device.hpp"
#include "tests/unit/device_test_support.hpp"

using namespace minictx;
using namespace minictx::test;

namespace {

constexpr int64_t kCount = int64_t(1) << 20;  // elements per buffer
constexpr double kSlowSeconds = 0.2;          // the kernel the transfers must wait for

// First use, not static initialisation: listing the tests needs no GPU.
CudaDevice& gpu() {
  static CudaDevice dev{Topology{}};
  return dev;
}

NcclComm& nccl() {
  static const std::unique_ptr<MpiComm> world = MpiComm::world(0);
  static const std::unique_ptr<NcclComm> comm = NcclComm::over(*world, gpu().gpu_stream());
  return *comm;
}

// What one rank's transfer gives: the values `want` as a tensor of `dtype` holds them.
struct Buffers {
  Tensor send, recv;
  std::vector<double> want;
};

// `send` zeroed, then, on the compute stream, the slow kernel and the copy that writes
// the values into `send`: nothing is in it until the kernel ends.
Buffers written_behind_slow_kernel(DType dtype, uint64_t id) {
  const Tensor values = upload(gpu(), generated(size_t(kCount), id), {kCount}, dtype);
  Buffers b{gpu().zeros({kCount}, dtype), gpu().zeros({kCount}, dtype), download(gpu(), values)};
  cuda::spin(gpu().gpu_stream(), kSlowSeconds);
  gpu().copy(b.send, values);
  return b;
}

void expect_host_result(const Tensor& got, const std::vector<double>& want) {
  const std::vector<double> values = download(gpu(), got);
  size_t wrong = 0;
  for (size_t i = 0; i < values.size(); ++i) wrong += values[i] != want[i];
  EXPECT_EQ(wrong, 0u) << "of " << values.size() << " elements; first: " << values[0] << " for " << want[0];
}

class NcclOneRank : public ::testing::TestWithParam<DType> {};

}  // namespace

// The GPU NCCL runs on is the one the cuda device chose (and made current).
TEST(NcclOneGpu, NcclRunsOnTheCudaDevicesGpu) {
  EXPECT_EQ(nccl().size(), 1);
  EXPECT_EQ(nccl().cuda_device(), gpu().gpu());
}

TEST(NcclOneGpu, ShiftToItself) {
  Buffers b = written_behind_slow_kernel(DType::f32, 1);
  ShiftHandle h = nccl().shift_start(b.send.raw(), b.recv.raw(), b.send.bytes(), 0, 0);
  nccl().wait(h);
  expect_host_result(b.recv, b.want);
}

TEST(NcclOneGpu, AllGather) {
  Buffers b = written_behind_slow_kernel(DType::bf16, 2);
  nccl().all_gather(b.send.raw(), b.recv.raw(), b.send.bytes());
  expect_host_result(b.recv, b.want);
}

TEST(NcclOneGpu, AllToAll) {
  Buffers b = written_behind_slow_kernel(DType::f32, 3);
  nccl().all_to_all(b.send.raw(), b.recv.raw(), b.send.bytes());
  expect_host_result(b.recv, b.want);
}

// A sub-group (the layer stack's and the 2D backends' groups) carries transfers as the
// world does, and counts its bytes in the world's totals.
TEST(NcclOneGpu, SplitGroupTransfers) {
  const std::unique_ptr<Comm> group = nccl().split(0, 0);
  ASSERT_EQ(group->size(), 1);
  const double before = nccl().bytes().intra + nccl().bytes().inter;
  Buffers b = written_behind_slow_kernel(DType::f32, 7);
  ShiftHandle h = group->shift_start(b.send.raw(), b.recv.raw(), b.send.bytes(), 0, 0);
  group->wait(h);
  expect_host_result(b.recv, b.want);
  EXPECT_EQ(nccl().bytes().intra + nccl().bytes().inter - before, double(b.send.bytes()));
}

TEST_P(NcclOneRank, ReduceScatter) {
  Buffers b = written_behind_slow_kernel(GetParam(), 4);
  nccl().reduce_scatter_sum(b.send.raw(), b.recv.raw(), kCount, GetParam());
  expect_host_result(b.recv, b.want);
}

// The layer's weight-gradient sum: started on the comm stream, completed after more
// compute is queued (the overlap the backward relies on), summed in place.
TEST_P(NcclOneRank, StartedGradientSum) {
  Buffers b = written_behind_slow_kernel(GetParam(), 5);
  Buffers other = written_behind_slow_kernel(GetParam(), 6);
  SumHandle h =
      nccl().start_sum({{b.send.raw(), kCount, GetParam()}, {other.send.raw(), kCount, GetParam()}});
  cuda::spin(gpu().gpu_stream(), kSlowSeconds);  // compute issued while the sum runs
  nccl().finish_sum(h);
  expect_host_result(b.send, b.want);
  expect_host_result(other.send, other.want);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, NcclOneRank, ::testing::Values(DType::f32, DType::bf16, DType::f16),
                         [](const auto& info) { return std::string(to_string(info.param)); });
