#include "bench/ring_timeline_gather.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/metrics.hpp"

namespace minictx {
namespace {

// A record as doubles: layer, pass, round, its place in the round (a step's step, an outer
// transfer's carries), the transfer's posted and done times; a step adds its source and
// compute start and end. The first four place a record in its walk.
constexpr size_t kSharedFields = 6, kStepFields = kSharedFields + 3, kOuterFields = kSharedFields;
constexpr size_t kKeyFields = 4;
// A phase scope as doubles: iteration, phase (its index in phase_names()), start, end; the
// first two are its key.
constexpr size_t kPhaseFields = 4, kPhaseKeyFields = 2;

template <class Record>
void pack_shared(std::vector<double>& out, const Record& r, double place) {
  out.insert(out.end(),
             {double(r.layer), double(r.pass), double(r.round), place, r.transfer_posted, r.transfer_done});
}

template <class Record>
Record unpack_shared(const double* f, size_t rank) {
  Record r;
  r.rank = int(rank);
  r.layer = int(f[0]);
  r.pass = WalkPass(int(f[1]));
  r.round = int(f[2]);
  r.transfer_posted = f[4];
  r.transfer_done = f[5];
  return r;
}

RingTimelineResult refuse(Comm& world, const std::string& why) {
  if (world.rank() == 0)
    std::fprintf(stderr, "minictx: warning: ring timeline not written: %s\n", why.c_str());
  return {};
}

// Every rank's records of `fields` doubles each (`mine`: this rank's) into `all`, rank by
// rank. Returns why they do not make one timeline, "" when they do: every rank has as many
// records as rank 0, and each one's record i has the keys of rank 0's.
std::string gather_records(Comm& world, const std::vector<double>& mine, size_t fields, const char* what,
                           std::vector<double>& all, size_t key_fields = kKeyFields) {
  const size_t ranks = size_t(world.size());
  const size_t n = mine.size() / fields;  // records: `fields` doubles each
  double count = double(n);
  std::vector<double> counts(ranks);
  world.gather_doubles(&count, counts.data(), 1);
  for (size_t r = 0; r < ranks; ++r)
    if (counts[r] != counts[0])
      return "rank " + std::to_string(r) + " ran " + std::to_string(int64_t(counts[r])) + " " + what +
             "s, rank 0 ran " + std::to_string(int64_t(counts[0]));
  all.resize(ranks * n * fields);
  world.gather_doubles(mine.data(), all.data(), int64_t(n * fields));
  for (size_t r = 0; r < ranks; ++r)
    for (size_t i = 0; i < n; ++i)
      for (size_t k = 0; k < key_fields; ++k)
        if (all[(r * n + i) * fields + k] != all[i * fields + k])
          return "rank " + std::to_string(r) + "'s " + what + " " + std::to_string(i) +
                 " belongs to another walk than rank 0's";
  return "";
}

// Every rank's phase scopes into `out`; "" or why they do not make one timeline.
std::string gather_phases(Comm& world, const std::vector<PhaseRecord>& mine, std::vector<PhaseRecord>& out) {
  const std::vector<std::string>& names = phase_names();
  std::vector<double> packed, all;
  for (const PhaseRecord& p : mine) {
    const auto at = std::find(names.begin(), names.end(), p.phase);
    if (at == names.end()) return "phase '" + p.phase + "' is not one the results file keeps";
    packed.insert(packed.end(), {double(p.iteration), double(at - names.begin()), p.start, p.end});
  }
  std::string why = gather_records(world, packed, kPhaseFields, "phase scope", all, kPhaseKeyFields);
  if (!why.empty()) return why;
  const size_t n = mine.size();
  out.reserve(size_t(world.size()) * n);
  for (size_t r = 0; r < size_t(world.size()); ++r)
    for (size_t i = 0; i < n; ++i) {
      const double* f = &all[(r * n + i) * kPhaseFields];
      out.push_back({int(r), int(f[0]), names[size_t(f[1])], f[2], f[3]});
    }
  return "";
}

}  // namespace

RingTimelineResult gather_ring_timeline(Comm& world, const RingTimeline& mine, int iteration,
                                        const std::vector<PhaseRecord>& phases) {
  const size_t ranks = size_t(world.size());
  std::vector<double> packed, all;
  for (const RingStep& s : mine.steps()) {
    pack_shared(packed, s, double(s.step));
    packed.insert(packed.end(), {double(s.source), s.compute_start, s.compute_end});
  }
  std::string why = gather_records(world, packed, kStepFields, "ring step", all);
  if (!why.empty()) return refuse(world, why);

  RingTimelineResult result;
  result.iteration = iteration;
  result.clock = mine.clock_name();
  const size_t n = mine.steps().size();
  result.steps.reserve(ranks * n);
  for (size_t r = 0; r < ranks; ++r)
    for (size_t i = 0; i < n; ++i) {
      const double* f = &all[(r * n + i) * kStepFields];
      RingStep s = unpack_shared<RingStep>(f, r);
      s.step = int(f[3]);
      s.source = int(f[6]);
      s.compute_start = f[7];
      s.compute_end = f[8];
      result.steps.push_back(s);
    }

  packed.clear();
  for (const OuterTransfer& o : mine.outer()) pack_shared(packed, o, double(o.carries));
  why = gather_records(world, packed, kOuterFields, "outer transfer", all);
  if (!why.empty()) return refuse(world, why);
  const size_t m = mine.outer().size();
  result.outer.reserve(ranks * m);
  for (size_t r = 0; r < ranks; ++r)
    for (size_t i = 0; i < m; ++i) {
      const double* f = &all[(r * m + i) * kOuterFields];
      OuterTransfer o = unpack_shared<OuterTransfer>(f, r);
      o.carries = OuterCarries(int(f[3]));
      result.outer.push_back(o);
    }
  why = gather_phases(world, phases, result.phases);
  if (!why.empty()) return refuse(world, why);
  return result;
}

}  // namespace minictx
