#pragma once
#include <cstdint>
#include <vector>

#include "backends/engine/sequence_layout.hpp"
#include "core/tensor.hpp"
#include "device/device.hpp"

namespace minictx {

// Fill this rank's shard [B·L, width] of a generated global tensor [B, S, width]:
// row (b, r) holds global token layout.global_position(part, r); padded rows are zero.
// Each value is factor · attention_input(seed, tensor, index, input_scale, key_directions,
// S, width): input_value, save attention-mode keys near shared directions.
void fill_shard(Device& device, Tensor& shard, const SequenceLayout& layout, int part, int batch,
                uint64_t seed, uint64_t tensor, double input_scale, double factor = 1.0,
                int key_directions = 0);

}  // namespace minictx
