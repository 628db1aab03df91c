#include "device/cuda/cuda_step_clock.hpp"

#include "core/cuda/cuda_check.hpp"

namespace minictx {

CudaStepClock::~CudaStepClock() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

cudaEvent_t CudaStepClock::record() {
  if (used_ == events_.size()) {
    cudaEvent_t e;
    CUDA_CHECK(cudaEventCreate(&e));  // with timing: marks are read back as elapsed times
    events_.push_back(e);
  }
  cudaEvent_t e = events_[used_++];
  CUDA_CHECK(cudaEventRecord(e, stream_));
  return e;
}

void CudaStepClock::start() {
  used_ = 0;
  record();
}

StepClock::Mark CudaStepClock::mark() {
  record();
  return Mark(used_ - 2);  // events_[0] is the zero
}

std::vector<double> CudaStepClock::seconds() {
  std::vector<double> s;
  if (used_ == 0) return s;
  CUDA_CHECK(cudaEventSynchronize(events_[used_ - 1]));
  for (size_t i = 1; i < used_; ++i) {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, events_[0], events_[i]));
    s.push_back(double(ms) * 1e-3);
  }
  return s;
}

}  // namespace minictx
