#pragma once
#include <cstdint>
#include <vector>

namespace minictx {

// The rule of a started transfer (Comm::shift_start, Comm::all_reduce_sum_start),
// checked by the host comm in debug builds (the sanitizer preset): until its wait, the
// caller writes none of its buffers and reads nothing the transfer writes. The GPU comms
// run their transfers beside the compute stream on the strength of that rule, and the
// backends and the layer stack issue the same calls on every device, so holding them to
// it here holds them to it there. The transfer lands in a buffer of the check's own while
// the caller's buffer it writes holds NaN (0xFF bytes are a NaN in fp32, bf16 and fp16):
// a kernel that reads it early computes NaN, which verify reports. finish() stops the run
// with one line if a buffer was written, then copies what arrived into place. A buffer
// released before the wait is a use of poisoned memory under AddressSanitizer (BlockCache
// poisons kept blocks).
class TransferRuleCheck {
 public:
  // A ring shift of send_bytes from `send` and recv_bytes into `recv`.
  TransferRuleCheck(const void* send, int64_t send_bytes, void* recv, int64_t recv_bytes);
  // A sum in place over `buffer`: the transfer sums a copy of it.
  TransferRuleCheck(void* buffer, int64_t bytes);
  void* landing() { return landing_.data(); }  // where the transfer reads and writes in place of the caller's
  void finish() const;

 private:
  const char* written_;                  // the error line for a write to the buffer the transfer writes
  const unsigned char* send_ = nullptr;  // a shift's send buffer, which must not change
  unsigned char* recv_;
  std::vector<unsigned char> sent_, landing_;
};

#ifdef NDEBUG
constexpr bool kCheckTransferRules = false;
#else
constexpr bool kCheckTransferRules = true;
#endif

}  // namespace minictx
