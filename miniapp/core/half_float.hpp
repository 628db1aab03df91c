#pragma once
#include <cstdint>
#include <cstring>

#include "core/dtype.hpp"

// The host's conversions between fp32 and the 16-bit formats (bf16: 8-bit exponent,
// 7-bit mantissa; fp16: IEEE binary16), rounding to nearest, ties to even, as the GPU's
// __float2bfloat16_rn / __float2half_rn do. NaN stays NaN; fp16 overflows to ±inf and
// keeps its subnormals.
namespace minictx::half_float {

inline uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline float float_of(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

inline uint16_t to_bf16(float x) {
  const uint32_t u = bits_of(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN
  const uint32_t lsb = (u >> 16) & 1u;
  return uint16_t((u + 0x7fffu + lsb) >> 16);
}
inline float from_bf16(uint16_t h) { return float_of(uint32_t(h) << 16); }

inline uint16_t to_f16(float x) {
  const uint32_t u = bits_of(x);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to ≥ 2^16: inf
  if (a < 0x38800000u) {
    // Below fp16's smallest normal 2^-14: a subnormal multiple of 2^-24, rounded.
    // Adding 0.5 makes the hardware round at exactly that position, ties to even.
    const float f = float_of(a) + 0.5f;
    return uint16_t(sign | (bits_of(f) - bits_of(0.5f)));
  }
  // Normal: rebias the exponent (127 → 15) and round the 13 dropped mantissa bits.
  const uint32_t lsb = (a >> 13) & 1u;
  return uint16_t(sign | ((a - (uint32_t(112) << 23) + 0xfffu + lsb) >> 13));
}
inline float from_f16(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return float_of(sign | 0x7f800000u | (m << 13));  // inf, NaN
  if (e == 0) {                                                    // zero, subnormal: m · 2^-24
    const float f = float(m) * float_of(0x33800000u);
    return sign ? -f : f;
  }
  return float_of(sign | ((e + 112) << 23) | (m << 13));
}

// The conversions for a 16-bit DType (bf16 or f16).
inline uint16_t narrow(float x, DType t) { return t == DType::bf16 ? to_bf16(x) : to_f16(x); }
inline float widen(uint16_t h, DType t) { return t == DType::bf16 ? from_bf16(h) : from_f16(h); }

}  // namespace minictx::half_float
