#include "backends/backend.hpp"

#include "core/error.hpp"

namespace minictx {

TrafficShape ring_engine_traffic(const AttentionConfig& a) { return {false, ring_layout(a), false}; }

void AttentionBackend::forward_query_prefix(const AttnShape&, const Tensor&, const Tensor&, const Tensor&,
                                            Tensor&, Tensor&) {
  require(false,
          "this attention backend cannot run the forward of a query prefix (validate_backend refuses it)");
}

}  // namespace minictx
