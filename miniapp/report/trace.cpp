#include "report/trace.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.hpp"
#include "io/results_schema.hpp"

namespace minictx {
namespace {

using json = nlohmann::ordered_json;

// The tracks of a rank (Chrome's threads of a process).
enum Track { kWork = 0, kRingTransfers = 1, kOuterBlocks = 2, kOuterSums = 3 };
const char* track_name(int track) {
  switch (track) {
    case kWork:
      return "phases, ring steps and waits";
    case kRingTransfers:
      return "comm: ring transfers";
    case kOuterBlocks:
      return "comm: outer ring, blocks";
    default:
      return "comm: outer ring, gradient sums";
  }
}

// Where each timed iteration starts on the trace's time axis, in seconds: iterations back
// to back, each as long as its slowest rank (the barrier and checks between them are not
// timed). Each rank's times are seconds after the start of the iteration on its own clock.
std::vector<double> iteration_offsets(const PointResult& p) {
  std::vector<double> at(size_t(std::max(p.iters, 0)) + 1, 0.0);
  for (int i = 0; i < p.iters; ++i) {
    double slowest = 0;
    for (int r = 0; r < p.ranks; ++r) {
      const size_t k = size_t(i) * size_t(p.ranks) + size_t(r);
      if (k < p.iter_seconds.size()) slowest = std::max(slowest, p.iter_seconds[k]);
    }
    at[size_t(i) + 1] = at[size_t(i)] + slowest;
  }
  return at;
}

constexpr double kMicro = 1e6;  // trace times are microseconds

// A complete event; InputError for one the format cannot hold (a time that is not finite,
// an end before the start), which only a damaged file has.
json complete(const std::string& name, const char* category, int rank, int track, double start_s,
              double end_s, json args) {
  if (!std::isfinite(start_s) || !std::isfinite(end_s) || end_s < start_s)
    input_error("report --trace: rank " + std::to_string(rank) + "'s " + name + " runs from " +
                std::to_string(start_s) + " to " + std::to_string(end_s) + " s: the timeline is damaged");
  return {{"name", name},
          {"cat", category},
          {"ph", "X"},
          {"pid", rank},
          {"tid", track},
          {"ts", start_s * kMicro},
          {"dur", (end_s - start_s) * kMicro},
          {"args", std::move(args)}};
}

json metadata(const char* what, int rank, int track, const std::string& name) {
  json e = {{"name", what}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", name}}}};
  if (track >= 0) e["tid"] = track;
  return e;
}

void add_steps(json& events, const RingTimelineResult& t, double at) {
  for (const RingStep& s : t.steps) {
    const json where = {{"layer", s.layer},
                        {"pass", to_string(s.pass)},
                        {"round", s.round},
                        {"step", s.step},
                        {"source", s.source}};
    events.push_back(
        complete("step " + std::to_string(s.step) + " (block of rank " + std::to_string(s.source) + ")",
                 "ring_step", s.rank, kWork, at + s.compute_start, at + s.compute_end, where));
    if (std::isnan(s.transfer_posted)) continue;  // the step moved nothing
    if (s.transfer_done > s.compute_end)          // the wait the compute did not hide
      events.push_back(
          complete("ring_wait", "wait", s.rank, kWork, at + s.compute_end, at + s.transfer_done, where));
    events.push_back(complete("ring_transfer", "transfer", s.rank, kRingTransfers, at + s.transfer_posted,
                              at + s.transfer_done, where));
  }
  for (const OuterTransfer& o : t.outer) {
    const bool block = o.carries == OuterCarries::block;
    events.push_back(complete(block ? "ring_outer_block" : "ring_outer_sums", "transfer", o.rank,
                              block ? kOuterBlocks : kOuterSums, at + o.transfer_posted, at + o.transfer_done,
                              {{"layer", o.layer}, {"pass", to_string(o.pass)}, {"round", o.round}}));
  }
}

}  // namespace

std::string chrome_trace(const PointResult& p) {
  const RingTimelineResult& t = p.ring_timeline;
  if (t.iteration < 0 || (t.steps.empty() && t.phases.empty()))
    input_error("report --trace: " + p.name +
                " recorded no timeline (run it with --set run.ring_timeline=true)");
  const std::vector<double> offset = iteration_offsets(p);
  const auto start_of = [&](int64_t iteration) {
    return iteration >= 0 && size_t(iteration) < offset.size() ? offset[size_t(iteration)] : 0.0;
  };
  json events = json::array();
  for (int r = 0; r < p.ranks; ++r) {
    events.push_back(metadata("process_name", r, -1, "rank " + std::to_string(r)));
    events.push_back(
        {{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"args", {{"sort_index", r}}}});
    const int tracks = t.outer.empty() ? kRingTransfers : kOuterSums;
    for (int track = kWork; track <= tracks; ++track)
      events.push_back(metadata("thread_name", r, track, track_name(track)));
  }
  for (const PhaseRecord& ph : t.phases)
    events.push_back(complete(ph.phase, "phase", ph.rank, kWork, start_of(ph.iteration) + ph.start,
                              start_of(ph.iteration) + ph.end, {{"iteration", ph.iteration}}));
  add_steps(events, t, start_of(t.iteration));
  const auto label = [&](const char* key) {
    const auto it = p.labels.find(key);
    return it == p.labels.end() ? std::string() : it->second;
  };
  namespace lk = schema::label_key;
  json trace = {
      {"traceEvents", std::move(events)},
      {"displayTimeUnit", "ms"},
      {"otherData",
       {{"point", p.name},
        {"backend", label(lk::backend)},
        {"ring_type", label(lk::ring_type)},
        {"world_size", p.ranks},
        {"seq_len", label(lk::seq_len)},
        {"iters", p.iters},
        {"ring_steps_of_iteration", t.iteration},
        {"recorded_iteration_start_us", start_of(t.iteration) * kMicro},
        {"clock", t.clock},
        {"time_axis",
         "microseconds; timed iterations back to back, each as long as its slowest rank; each rank's "
         "times on its own clock from the barrier before the iteration"}}}};
  return trace.dump(1) + "\n";
}

}  // namespace minictx
