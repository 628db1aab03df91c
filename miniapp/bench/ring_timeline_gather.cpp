#include "bench/ring_timeline_gather.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace minictx {
namespace {

// One step as doubles, in this order: layer, pass, round, step, source and the four times.
constexpr size_t kFields = 9;

RingTimelineResult refuse(Comm& world, const std::string& why) {
  if (world.rank() == 0)
    std::fprintf(stderr, "minictx: warning: ring timeline not written: %s\n", why.c_str());
  return {};
}

}  // namespace

RingTimelineResult gather_ring_timeline(Comm& world, const RingTimeline& mine, int iteration) {
  const size_t ranks = size_t(world.size());
  const std::vector<RingStep>& steps = mine.steps();
  double count = double(steps.size());
  std::vector<double> counts(ranks);
  world.gather_doubles(&count, counts.data(), 1);
  for (size_t r = 0; r < ranks; ++r)
    if (counts[r] != counts[0])
      return refuse(world, "rank " + std::to_string(r) + " ran " + std::to_string(int64_t(counts[r])) +
                               " ring steps, rank 0 ran " + std::to_string(int64_t(counts[0])));
  const size_t n = steps.size();
  std::vector<double> packed;
  packed.reserve(n * kFields);
  for (const RingStep& s : steps)
    packed.insert(packed.end(),
                  {double(s.layer), double(s.pass), double(s.round), double(s.step), double(s.source),
                   s.compute_start, s.compute_end, s.transfer_posted, s.transfer_done});
  std::vector<double> all(ranks * n * kFields);
  world.gather_doubles(packed.data(), all.data(), int64_t(n * kFields));

  RingTimelineResult result;
  result.iteration = iteration;
  result.clock = mine.clock_name();
  result.steps.reserve(ranks * n);
  for (size_t r = 0; r < ranks; ++r)
    for (size_t i = 0; i < n; ++i) {
      const double* f = &all[(r * n + i) * kFields];
      const double* first = &all[i * kFields];  // rank 0's step i
      // Same walk (layer, pass) and place in it (round, step) as rank 0's step i.
      for (size_t k = 0; k < 4; ++k)
        if (f[k] != first[k])
          return refuse(world, "rank " + std::to_string(r) + "'s ring step " + std::to_string(i) +
                                   " belongs to another walk than rank 0's");
      RingStep s;
      s.rank = int(r);
      s.layer = int(f[0]);
      s.pass = WalkPass(int(f[1]));
      s.round = int(f[2]);
      s.step = int(f[3]);
      s.source = int(f[4]);
      s.compute_start = f[5];
      s.compute_end = f[6];
      s.transfer_posted = f[7];
      s.transfer_done = f[8];
      result.steps.push_back(s);
    }
  return result;
}

}  // namespace minictx
