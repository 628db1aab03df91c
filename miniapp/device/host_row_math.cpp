#include "device/host_row_math.hpp"

#include <limits>

namespace minictx::host {

// Clones for wider vectors where the CPU has them; callers in other files reach the
// resolver through the plain declarations of the header.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MINICTX_ROW_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MINICTX_ROW_CLONES
#endif

MINICTX_ROW_CLONES float row_max(const float* x, int n) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float lanes[kLanes];
  for (float& l : lanes) l = kNegInf;
  int j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] = x[j + l] > lanes[l] ? x[j + l] : lanes[l];
  float m = kNegInf;
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  for (float l : lanes) m = l > m ? l : m;
  return m;
}

namespace {
// Exponents below −126, the domain of exp2_clamped, become −126: 2^x < 1.2e-38 there.
inline float clamp_exponent(float y) { return y < -126.0f ? -126.0f : y; }
}  // namespace

MINICTX_ROW_CLONES float exp2_shift_sum(float* x, int n, float shift, float scale) {
  for (int j = 0; j < n; ++j) x[j] = clamp_exponent((x[j] - shift) * scale);
  float lanes[kLanes] = {};
  int j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      x[j + l] = exp2_clamped(x[j + l]);
      lanes[l] += x[j + l];
    }
  float sum = 0.0f;
  for (; j < n; ++j) {
    x[j] = exp2_clamped(x[j]);
    sum += x[j];
  }
  for (float l : lanes) sum += l;
  return sum;
}

MINICTX_ROW_CLONES void exp2_affine(float* x, int n, double a, double shift) {
  for (int j = 0; j < n; ++j) x[j] = clamp_exponent(float(double(x[j]) * a - shift));
  for (int j = 0; j < n; ++j) x[j] = exp2_clamped(x[j]);
}

MINICTX_ROW_CLONES void softmax_grad(float* p, const float* dp, int n, float delta) {
  for (int j = 0; j < n; ++j) p[j] *= dp[j] - delta;
}

MINICTX_ROW_CLONES void scale_row(float* x, int n, float a) {
  for (int j = 0; j < n; ++j) x[j] *= a;
}

}  // namespace minictx::host
