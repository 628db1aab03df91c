#include "core/rng.hpp"

#include <array>

namespace minictx {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;

inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = uint64_t(a) * uint64_t(b);
  hi = uint32_t(p >> 32);
  lo = uint32_t(p);
}

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, ctr[0], hi0, lo0);
    mulhilo(kMul1, ctr[2], hi1, lo1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
    key[0] += kWeyl0;
    key[1] += kWeyl1;
  }
  return ctr;
}

}  // namespace

double CounterRng::uniform(uint64_t index) const {
  const std::array<uint32_t, 4> ctr = {uint32_t(index), uint32_t(index >> 32), uint32_t(tensor_),
                                       uint32_t(tensor_ >> 32)};
  const std::array<uint32_t, 2> key = {uint32_t(seed_), uint32_t(seed_ >> 32)};
  const auto r = philox4x32_10(ctr, key);
  // 53 random bits -> [0, 1) -> [-1, 1).
  const uint64_t bits = (uint64_t(r[0]) << 21) ^ (uint64_t(r[1]) >> 11);
  return double(bits & ((uint64_t(1) << 53) - 1)) * 0x1.0p-52 - 1.0;
}

}  // namespace minictx
