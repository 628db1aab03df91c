#include "bench/comm_bench.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "bench/lockstep.hpp"
#include "core/error.hpp"
#include "io/hdf5_util.hpp"
#include "io/output_file.hpp"
#include "io/results_writer.hpp"

namespace minictx {
namespace {

using clock_type = std::chrono::steady_clock;

// Best time of `op` over repetitions lasting at least min_seconds (at least 3), the slowest
// rank's of each, on the wall clock.
template <class Op>
double best_seconds(Comm& c, double min_seconds, const Op& op) {
  return lockstep_best_seconds(c, min_seconds, 3, BenchClock::wall, op);
}

// The buffers of one transfer, written once and reused by every repetition, as the run
// reuses the memory of its per-call buffers (BlockCache) from its second step on.
struct TransferBuffers {
  explicit TransferBuffers(int64_t count) : send(size_t(count), 1.0f), recv(size_t(count), 0.0f) {}
  std::vector<float> send, recv;
};

// Wall-clock spin for `seconds` without an MPI call: a kernel, as far as MPI's progress
// is concerned.
void compute_for(double seconds) {
  const auto t0 = clock_type::now();
  while (std::chrono::duration<double>(clock_type::now() - t0).count() < seconds) {
  }
}

// Exchanges between world rank 0 and `peer` (both directions at once); other ranks idle.
// Rows `exchange`, one per size; then the overlap: at the largest size, the wait that is
// left after a kernel twice the transfer's length, which ran between posting the
// exchange and waiting for it.
void exchange_rows(Comm& world, int peer, const std::string& link, const std::vector<double>& sizes,
                   double min_seconds, CommBenchResult& r, CommBenchResult::Link& rate) {
  const bool in_pair = world.rank() == 0 || world.rank() == peer;
  std::unique_ptr<Comm> pair = world.split(in_pair ? 0 : 1, world.rank());
  auto rank0 = [&](double t) {
    std::vector<double> times(size_t(world.size()));
    world.gather_doubles(&t, times.data(), 1);
    return times[0];
  };
  auto exchange = [&](TransferBuffers& b, int64_t count, double before_wait) {
    ShiftHandle h = pair->shift_start(b.send.data(), b.recv.data(), count * int64_t(sizeof(float)),
                                      1 - pair->rank(), 1 - pair->rank());
    if (before_wait > 0) compute_for(before_wait);
    const auto t0 = clock_type::now();
    pair->wait(h);
    return std::chrono::duration<double>(clock_type::now() - t0).count();
  };
  const size_t first = r.rows.size();
  for (double bytes : sizes) {
    const int64_t count = std::max<int64_t>(1, int64_t(bytes / sizeof(float)));
    TransferBuffers b(count);
    double t = 0;
    if (in_pair) t = best_seconds(*pair, min_seconds, [&] { exchange(b, count, 0); });
    t = rank0(t);
    const double sent = double(count) * sizeof(float);
    r.rows.push_back({"exchange", link, sent, t, sent / t / 1e9});
  }
  rate.measured = true;
  rate.latency_us = r.rows[first].seconds * 1e6;
  // The best rate of the larger sizes (latency included, so a latency inflated by a
  // loaded host cannot make it absurd).
  for (size_t i = first + 1; i < first + sizes.size(); ++i)
    rate.bandwidth_gb_s = std::max(rate.bandwidth_gb_s, r.rows[i].gb_s);

  const double largest = r.rows[first + sizes.size() - 1].seconds;
  const int64_t count = std::max<int64_t>(1, int64_t(sizes.back() / sizeof(float)));
  TransferBuffers b(count);
  double left = 0;
  if (in_pair) {
    left = 1e300;
    int reps = 0;
    for (double spent = 0; reps < 3 || spent < min_seconds; ++reps) {
      pair->barrier();
      const double w = exchange(b, count, 2 * largest);
      double all = w;
      std::vector<double> both(2);
      pair->gather_doubles(&all, both.data(), 1);
      left = std::min(left, std::max(both[0], both[1]));
      spent += 2 * largest + left;
    }
  }
  left = rank0(left);
  rate.overlap = std::clamp(1.0 - left / largest, 0.0, 1.0);
  r.rows.push_back({"exchange_after_kernel", link, double(count) * sizeof(float), left, 0});
}

}  // namespace

CommBenchResult run_comm_bench(Comm& world, const std::vector<double>& sizes_in, double min_seconds) {
  require(world.size() >= 2, "bench --comm needs at least 2 ranks");
  std::vector<double> sizes = sizes_in;
  std::sort(sizes.begin(), sizes.end());
  CommBenchResult r;
  const Topology& t = world.topology();
  if (t.node_of(0) == t.node_of(1)) exchange_rows(world, 1, "intra", sizes, min_seconds, r, r.intra);
  if (world.size() > t.ranks_per_node)
    exchange_rows(world, t.ranks_per_node, "inter", sizes, min_seconds, r, r.inter);
  for (double bytes : sizes) {
    const int64_t count = std::max<int64_t>(1, int64_t(bytes / sizeof(float)));
    TransferBuffers b(count * world.size());
    const double a2a = best_seconds(world, min_seconds, [&] {
      world.all_to_all(b.send.data(), b.recv.data(), count * int64_t(sizeof(float)));
    });
    r.rows.push_back({"all_to_all", "world", double(count) * sizeof(float), a2a,
                      double(count) * sizeof(float) * (world.size() - 1) / a2a / 1e9});
    std::vector<float> buf(size_t(count), 1.0f);
    const double ar = best_seconds(world, min_seconds, [&] { world.all_reduce_sum(buf.data(), count); });
    r.rows.push_back({"all_reduce", "world", double(count) * sizeof(float), ar,
                      2.0 * (world.size() - 1) / world.size() * double(count) * sizeof(float) / ar / 1e9});
  }
  world.bytes().reset();
  return r;
}

void write_comm_bench(const std::string& path, const Provenance& prov, const CommBenchResult& result,
                      bool overwrite) {
  h5::QuietErrors quiet;
  const std::string image = h5::file_image([&](hid_t file) {
    write_provenance(file, prov);
    h5::Handle c = h5::create_group(file, "comm");
    for (const auto& [name, link] : {std::pair{"intra", result.intra}, std::pair{"inter", result.inter}}) {
      if (!link.measured) continue;
      h5::write_attribute(c.get(), std::string(name) + "_latency_us", link.latency_us);
      h5::write_attribute(c.get(), std::string(name) + "_bandwidth_gb_s", link.bandwidth_gb_s);
      h5::write_attribute(c.get(), std::string(name) + "_overlap", link.overlap);
    }
    std::vector<std::string> kind, link;
    std::vector<double> bytes, seconds, gb_s;
    for (const auto& row : result.rows) {
      kind.push_back(row.kind);
      link.push_back(row.link);
      bytes.push_back(row.bytes);
      seconds.push_back(row.seconds);
      gb_s.push_back(row.gb_s);
    }
    h5::write_strings(c.get(), "kind", kind);
    h5::write_strings(c.get(), "link", link);
    h5::write_doubles(c.get(), "bytes", bytes, {hsize_t(bytes.size())});
    h5::write_doubles(c.get(), "seconds", seconds, {hsize_t(seconds.size())});
    h5::write_doubles(c.get(), "gb_s", gb_s, {hsize_t(gb_s.size())});
  });
  write_output_file(path, "results file", overwrite, image,
                    "results file " + path + " exists; pass --force to replace it");
}

}  // namespace minictx
