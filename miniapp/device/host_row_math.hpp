#pragma once
#include <cstdint>
#include <cstring>

// Row operations of the host attention kernel, written so that GCC and Clang vectorise
// them with the baseline instruction set (SSE2 on x86-64, NEON on AArch64) at -O3 and
// without -ffast-math: reductions keep fixed-width lane accumulators (so no reassociation
// is needed), and exp2 is a branch-free polynomial instead of a libm call.
namespace minictx::host {

constexpr int kLanes = 16;  // one AVX-512 register, two AVX2, four SSE2

// 2^x for -126 <= x <= 0, relative error below 2e-7. Free of float→int conversions
// and of branches: either would stop the vectoriser under the default -ftrapping-math
// (so callers clamp in a loop of their own).
inline float exp2_clamped(float x) {
  const float t = x + 12582912.0f;        // 1.5·2^23: the low mantissa bits of t hold round(x)
  const float f = x - (t - 12582912.0f);  // in [-0.5, 0.5]
  // Taylor series of e^(f ln 2) to degree 7: truncation error < 1e-9 on [-0.5, 0.5].
  float p = 1.5252734e-5f;
  p = p * f + 1.5403530e-4f;
  p = p * f + 1.3333558e-3f;
  p = p * f + 9.6181291e-3f;
  p = p * f + 5.5504109e-2f;
  p = p * f + 2.4022651e-1f;
  p = p * f + 6.9314718e-1f;
  p = p * f + 1.0f;
  int32_t t_bits;
  std::memcpy(&t_bits, &t, sizeof t_bits);
  const int32_t bits = (t_bits - 0x4B400000 + 127) << 23;  // 2^round(x) as a float
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// On x86-64 these are built for AVX-512F, AVX2 and the baseline (host_row_math.cpp);
// the CPU picks its clone at load time, so the binary stays portable (no -march).

// max of x[0, n); -inf for n = 0.
float row_max(const float* x, int n);

// x[j] = 2^((x[j] − shift) · scale) for j < n; returns the sum of the new values. The
// difference comes before the scale: scores near the shift lose nothing to their size.
float exp2_shift_sum(float* x, int n, float shift, float scale);

// x[j] = 2^(x[j] · a − shift) for j < n, the exponent formed in double: with a shift of
// 10⁴, a float's rounding of it alone would move the result by 10⁻³.
void exp2_affine(float* x, int n, double a, double shift);

// p[j] ← p[j] · (dp[j] − delta) for j < n: softmax's backward, dP → dS.
void softmax_grad(float* p, const float* dp, int n, float delta);

// x[j] ← x[j] · a for j < n.
void scale_row(float* x, int n, float a);

}  // namespace minictx::host
