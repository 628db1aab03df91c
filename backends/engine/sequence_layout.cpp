#include "backends/engine/sequence_layout.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/saturating.hpp"

namespace minictx {

SequenceLayout::SequenceLayout(LayoutKind kind, int64_t real_len, int outer, int inner)
    : kind_(kind), real_len_(real_len), outer_(outer), inner_(inner) {
  require(real_len > 0 && outer > 0 && inner > 0, "sequence layout needs a positive length and part counts");
  require(kind != LayoutKind::balanced, "a balanced layout is made from its chunks");
  // Every outer share must split into whole chunks (2 per part for zigzag) and every
  // share into `inner` equal pieces.
  const int64_t unit = int64_t(kind == LayoutKind::zigzag ? 2 : 1) * outer * inner;
  const std::optional<int64_t> padded = checked_mul(real_len / unit + (real_len % unit != 0), unit);
  if (!padded)
    input_error("sequence.length " + std::to_string(real_len) + " padded to a multiple of " +
                std::to_string(unit) + " tokens exceeds " + std::to_string(kSaturated));
  padded_len_ = *padded;
}

SequenceLayout::SequenceLayout(int64_t real_len, int outer, int inner, int64_t chunk_len,
                               std::vector<std::vector<int64_t>> chunks)
    : kind_(LayoutKind::balanced),
      real_len_(real_len),
      outer_(outer),
      inner_(inner),
      chunk_len_(chunk_len),
      chunks_(std::move(chunks)) {
  require(real_len > 0 && outer > 0 && inner > 0 && chunk_len > 0 && chunk_len % inner == 0 &&
              int(chunks_.size()) == outer,
          "balanced layout: one chunk list per outer part, chunks a multiple of the inner parts long");
  const int64_t each = int64_t(chunks_[0].size());
  padded_len_ = int64_t(outer) * each * chunk_len;
  require(padded_len_ >= real_len, "balanced layout: the chunks must cover the sequence");
  std::vector<bool> dealt(size_t(outer) * size_t(each), false);
  for (const auto& part : chunks_) {
    require(int64_t(part.size()) == each && std::is_sorted(part.begin(), part.end()),
            "balanced layout: every part holds as many chunks, in increasing order");
    for (int64_t c : part) {
      require(c >= 0 && c < int64_t(dealt.size()) && !dealt[size_t(c)],
              "balanced layout: a chunk dealt twice");
      dealt[size_t(c)] = true;
    }
  }
}

int64_t SequenceLayout::outer_position(int o, int64_t row) const {
  const int64_t share = outer_len();
  switch (kind_) {
    case LayoutKind::contiguous:
      return int64_t(o) * share + row;
    case LayoutKind::zigzag: {
      const int64_t chunk = share / 2;
      const int64_t c = row < chunk ? o : 2 * int64_t(outer_) - 1 - o;
      return c * chunk + row % chunk;
    }
    case LayoutKind::stripe:
      return row * outer_ + o;
    case LayoutKind::balanced:
      return chunks_[size_t(o)][size_t(row / chunk_len_)] * chunk_len_ + row % chunk_len_;
  }
  return 0;
}

int64_t SequenceLayout::global_position(int part, int64_t local_row) const {
  const int o = part / inner_, i = part % inner_;
  return outer_position(o, int64_t(i) * local_len() + local_row);
}

std::vector<int64_t> SequenceLayout::positions(int part) const {
  std::vector<int64_t> pos(static_cast<size_t>(local_len()));
  for (int64_t r = 0; r < local_len(); ++r) pos[size_t(r)] = global_position(part, r);
  return pos;
}

std::vector<int64_t> SequenceLayout::outer_positions(int o) const {
  std::vector<int64_t> pos(static_cast<size_t>(outer_len()));
  for (int64_t r = 0; r < outer_len(); ++r) pos[size_t(r)] = outer_position(o, r);
  return pos;
}

int64_t SequenceLayout::real_tokens(int part) const {
  int64_t n = 0;
  for (int64_t r = 0; r < local_len(); ++r) n += global_position(part, r) < real_len_;
  return n;
}

}  // namespace minictx
