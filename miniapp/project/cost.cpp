#include "project/cost.hpp"

#include <algorithm>

namespace minictx {

const char* to_string(Bound b) {
  switch (b) {
    case Bound::compute:
      return "compute";
    case Bound::intra:
      return "intra-node link";
    case Bound::inter:
      return "inter-node link";
    case Bound::memory:
      return "memory";
  }
  return "?";
}

Bound Cost::bound() const {
  const double most = std::max({compute, memory, intra, inter});
  if (most == compute) return Bound::compute;
  if (most == inter) return Bound::inter;
  if (most == intra) return Bound::intra;
  return Bound::memory;
}

Cost& Cost::operator+=(const Cost& o) {
  compute += o.compute;
  memory += o.memory;
  intra += o.intra;
  inter += o.inter;
  bytes_intra += o.bytes_intra;
  bytes_inter += o.bytes_inter;
  all_to_all += o.all_to_all;
  return *this;
}

Cost Cost::times(double k) const {
  Cost c = *this;
  c.compute *= k;
  c.memory *= k;
  c.intra *= k;
  c.inter *= k;
  c.bytes_intra *= k;
  c.bytes_inter *= k;
  c.all_to_all *= k;
  return c;
}

Cost cost_of(Bound by, double seconds) {
  Cost c;
  (by == Bound::compute  ? c.compute
   : by == Bound::memory ? c.memory
   : by == Bound::intra  ? c.intra
                         : c.inter) = seconds;
  return c;
}

Cost overlapped(double compute_s, double transfer_s, Bound link, double overlap) {
  const double under = overlap * transfer_s;
  Cost c = compute_s >= under ? cost_of(Bound::compute, compute_s) : cost_of(link, under);
  c += cost_of(link, transfer_s - under);
  return c;
}

}  // namespace minictx
