#pragma once
#include <cstdint>

namespace minictx {

// Element types: the run's dtype (run.dtype) and a tensor's storage.
enum class DType { f32, bf16, f16 };

constexpr int64_t element_bytes(DType t) { return t == DType::f32 ? 4 : 2; }

}  // namespace minictx
