#pragma once
#include <cstdint>

#include "device/device.hpp"

// The attention mask by global position, in one place: causality, padding, packed
// documents and the sliding window. The host kernel masks tiles by it and the ring
// engine skips whole blocks by it.
namespace minictx {

struct KeyRange {
  int64_t first = 0, end = 0;  // positions [first, end); empty when end <= first
};

// The keys the query at global position `pos` of batch row b sees; empty for a padded query.
KeyRange visible_keys(const AttnShape&, int b, int64_t pos);

// Whether some query of qpos[0, nq) sees some key of kpos[0, nk) in some batch row; both
// ascending.
bool any_visible(const AttnShape&, const int64_t* qpos, int64_t nq, const int64_t* kpos, int64_t nk);

}  // namespace minictx
