#include "model/shard_data.hpp"

#include "core/synthetic_data.hpp"

namespace minictx {

void fill_shard(Device& device, Tensor& shard, const SequenceLayout& layout, int part, int batch,
                uint64_t seed, uint64_t tensor, double input_scale, double factor, int key_directions) {
  const int64_t len = layout.local_len();
  const int64_t width = shard.numel() / (int64_t(batch) * len);
  const int64_t seq = layout.real_len();
  std::vector<float> host(size_t(shard.numel()), 0.0f);
  for (int b = 0; b < batch; ++b) {
    for (int64_t r = 0; r < len; ++r) {
      const int64_t pos = layout.global_position(part, r);
      if (pos >= seq) continue;
      float* row = host.data() + (int64_t(b) * len + r) * width;
      const uint64_t base = uint64_t((int64_t(b) * seq + pos) * width);
      for (int64_t j = 0; j < width; ++j)
        row[j] = float(factor * attention_input(seed, tensor, base + uint64_t(j), input_scale, key_directions,
                                                seq, width));
    }
  }
  device.upload(shard, host.data());
}

}  // namespace minictx
