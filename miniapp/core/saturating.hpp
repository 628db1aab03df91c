#pragma once
#include <cstdint>
#include <limits>

namespace minictx {

// Non-negative 64-bit sizes that stop at kSaturated instead of wrapping. A deck can ask
// for sizes past 2^63 bytes (by mistake or not); a guard whose product wraps to a small
// or negative number would let such a run through to the allocator.
constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();

inline int64_t sat_add(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? kSaturated : r;
}

inline int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? kSaturated : r;
}

// A size computed in floating point, as an int64 that saturates (NaN counts as too big).
inline int64_t saturate(long double x) {
  if (!(x < static_cast<long double>(kSaturated))) return kSaturated;
  return x <= 0 ? 0 : static_cast<int64_t>(x);
}

}  // namespace minictx
