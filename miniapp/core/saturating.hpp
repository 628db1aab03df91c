#pragma once
#include <cstdint>
#include <limits>
#include <optional>

namespace minictx {

// 64-bit arithmetic on counts, lengths and sizes formed from user input (deck keys,
// --ranks, document lengths), which never wraps: a wrapped sum or product reads as a
// small number that passes every check after it.

// Exact: the sum or product, or nothing when it does not fit in int64; the caller says
// what overflowed. For values that must be equal to or within a bound.
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Saturating: non-negative sizes that stop at kSaturated. For estimates a guard compares
// against a limit: a deck can ask for sizes past 2^63 bytes (by mistake or not), and a
// product that wrapped to a small or negative number would let such a run through to the
// allocator.
constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();

inline int64_t sat_add(int64_t a, int64_t b) { return checked_add(a, b).value_or(kSaturated); }

inline int64_t sat_mul(int64_t a, int64_t b) { return checked_mul(a, b).value_or(kSaturated); }

// A size computed in floating point, as an int64 that saturates (NaN counts as too big).
inline int64_t saturate(long double x) {
  if (!(x < static_cast<long double>(kSaturated))) return kSaturated;
  return x <= 0 ? 0 : static_cast<int64_t>(x);
}

}  // namespace minictx
