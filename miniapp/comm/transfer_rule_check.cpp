#include "comm/transfer_rule_check.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"

namespace minictx {

namespace {

constexpr unsigned char kPoison = 0xFF;

void poison(unsigned char* p, size_t bytes) {
  if (bytes > 0) std::memset(p, kPoison, bytes);
}

}  // namespace

TransferRuleCheck::TransferRuleCheck(const void* send, int64_t send_bytes, void* recv, int64_t recv_bytes)
    : written_("a ring shift's receive buffer was written before its wait() (the rule of Comm::shift_start)"),
      send_(static_cast<const unsigned char*>(send)),
      recv_(static_cast<unsigned char*>(recv)),
      sent_(send_, send_ + send_bytes),
      landing_(size_t(recv_bytes)) {
  poison(recv_, landing_.size());
}

TransferRuleCheck::TransferRuleCheck(void* buffer, int64_t bytes)
    : written_(
          "a started sum's buffer was written before its wait_sum() (the rule of "
          "Comm::all_reduce_sum_start)"),
      recv_(static_cast<unsigned char*>(buffer)),
      landing_(recv_, recv_ + bytes) {
  poison(recv_, landing_.size());
}

void TransferRuleCheck::finish() const {
  require(std::equal(sent_.begin(), sent_.end(), send_),
          "a ring shift's send buffer was written before its wait() (the rule of Comm::shift_start)");
  require(std::all_of(recv_, recv_ + landing_.size(), [](unsigned char c) { return c == kPoison; }),
          written_);
  if (!landing_.empty()) std::memcpy(recv_, landing_.data(), landing_.size());
}

}  // namespace minictx
