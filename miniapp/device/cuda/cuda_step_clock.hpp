#pragma once
#include <cuda_runtime.h>

#include <vector>

#include "core/step_clock.hpp"

namespace minictx {

// Marks as CUDA events recorded on the compute stream: a mark is the moment the stream
// reaches that point of the rank's work, which the host, that only queues the work, cannot
// see. A ring step's transfer_posted is then where the comm stream may start the transfer
// (it waits for this point), and transfer_done where the compute stream has both finished
// its earlier work and waited for the transfer. The events are made once and reused by
// later recordings; seconds() waits for the last one.
class CudaStepClock final : public StepClock {
 public:
  explicit CudaStepClock(cudaStream_t stream) : stream_(stream) {}
  ~CudaStepClock() override;
  CudaStepClock(const CudaStepClock&) = delete;
  CudaStepClock& operator=(const CudaStepClock&) = delete;

  void start() override;
  Mark mark() override;
  std::vector<double> seconds() override;
  const char* name() const override { return "cuda events (compute stream)"; }

 private:
  // Records the next event of the pool (made when the pool runs out) on the stream.
  cudaEvent_t record();

  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;  // [0] = the zero, then one per mark
  size_t used_ = 0;
};

}  // namespace minictx
