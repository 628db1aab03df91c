#include "app/run_command.hpp"

#include <mpi.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "app/agree.hpp"
#include "app/count_option.hpp"
#include "app/interrupt.hpp"
#include "app/output_path.hpp"
#include "app/progress.hpp"
#include "app/provenance.hpp"
#include "app/resume_check.hpp"
#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "bench/calibration.hpp"
#include "bench/labels.hpp"
#include "bench/runner.hpp"
#include "comm/comm_factory.hpp"
#include "comm/mpi_comm.hpp"
#include "comm/watchdog.hpp"
#include "config/machine_profile.hpp"
#include "core/error.hpp"
#include "core/fault_seam.hpp"
#include "device/device.hpp"
#include "driver/verification.hpp"
#include "io/results_reader.hpp"
#include "io/results_schema.hpp"
#include "io/results_writer.hpp"
#include "model/memory_estimate.hpp"
#include "report/report.hpp"
#include "report/table.hpp"

namespace minictx {
namespace {

using Options = RunCommand::Options;

// Everything a run sets up, on every rank alike, before its first point.
struct RunSetup {
  std::vector<SweepPoint> points;
  std::vector<std::string> skipped;  // per point: "" if it runs on this world, else why not
  std::unique_ptr<Device> device;
  std::unique_ptr<Comm> world;  // after the device, so destroyed before it: it queues work on its stream
  std::unique_ptr<OutputClaim> claim;     // rank 0 only, from the start until the writer holds it
  std::unique_ptr<ResultsWriter> writer;  // rank 0 only: serial HDF5
};

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

void check_options(const Options& o) {
  if (o.force && o.resume)
    input_error(
        "--force and --resume contradict each other: --force replaces the results file, --resume continues "
        "it");
}

void check_ranks_per_node(int per_node, int world, const std::string& what) {
  if (per_node < 1 || per_node > world)
    input_error(what + " must be between 1 and the world size " + std::to_string(world) + ", got " +
                std::to_string(per_node));
}

OnExisting on_existing(const Options& o, const RunConfig& first) {
  if (o.resume) return OnExisting::resume;
  return o.force || first.output.overwrite ? OnExisting::replace : OnExisting::refuse;
}

// For each point: "" if it runs on this topology, else why not. A single point that
// cannot run is an error; inside a sweep it is a recorded skip.
std::vector<std::string> skip_reasons(const std::vector<SweepPoint>& points, const Topology& topology) {
  std::vector<std::string> reasons;
  for (const auto& p : points) {
    std::string reason;
    try {
      const int wanted = p.config.topology.world_size;
      if (wanted > 0 && wanted != topology.world_size)
        input_error("topology.world_size is " + std::to_string(wanted) + " but this run has " +
                    std::to_string(topology.world_size) + " ranks");
      validate_backend(p.config, topology);
    } catch (const InputError& e) {
      if (points.size() == 1) throw;
      reason = e.what();
    }
    reasons.push_back(reason);
  }
  return reasons;
}

std::string describe(const SweepPoint& p, size_t i) {
  return point_name(i) + " " + (p.label.empty() ? p.config.attention.backend : p.label);
}

// The deck's machine profile as `project` reads it (devices per node, device memory), or
// none: `measure`, a profile with peaks only, or one not found here.
std::optional<ProjectionProfile> deck_profile(const RunConfig& cfg, const std::string& deck_path) {
  try {
    const std::filesystem::path dir =
        deck_path.empty() ? std::filesystem::path() : std::filesystem::absolute(deck_path).parent_path();
    return load_projection_profile(cfg.machine.profile, dir);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Where the dry run's memory check comes from: the capacity per rank and its source.
struct DryRunCapacity {
  int64_t bytes = -1;  // -1: none known here
  std::string source;  // "this host's kokkos device", "machine profile h100-sxm-ndr (80 GiB per device)"
};

// Memory per rank of the deck's device for the dry run's ranks per node: this host's
// device where the build has the deck's; for a device this build lacks (a GPU class on a
// login node's host build), the device memory of the deck's machine profile.
DryRunCapacity dry_run_capacity(const RunConfig& cfg, const Topology& topology,
                                const std::optional<ProjectionProfile>& profile, bool built) {
  if (built) {
    try {
      return {capacity_per_rank(*make_device(cfg.run.device, topology), topology),
              std::string("this host's ") + to_string(cfg.run.device) + " device"};
    } catch (const Error&) {
      return {};
    }
  }
  if (!profile || profile->memory_gib <= 0) return {};
  std::ostringstream gib;
  gib << profile->memory_gib;
  return {int64_t(profile->memory_gib * double(int64_t(1) << 30)),
          "machine profile " + cfg.machine.profile + " (" + gib.str() + " GiB per device)"};
}

// Why this build cannot run on `kind` (the line make_device would give, which names the
// build that can), or "" when it can.
std::string build_refusal(DeviceKind kind) {
  for (const auto& d : device_registry())
    if (d.kind == kind) return "";
  try {
    make_device(kind, Topology{});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The one error line of a launch where no point can run: a job started at the wrong rank
// count must not look like a finished one.
std::string nothing_runs(const std::vector<SweepPoint>& points, const std::vector<std::string>& skipped,
                         int world_size) {
  return "none of the deck's " + std::to_string(points.size()) + " points runs on " +
         std::to_string(world_size) + " ranks (" + point_name(0) + ": " + skipped.front() +
         "); nothing was run or written";
}

// The dry run's topology: --ranks, else this launch's ranks (the deck's
// topology.world_size when it is one process); --ranks-per-node, else the deck's, else the machine profile's
// devices per node for a device this build lacks (a GPU class), else all on one node.
Topology dry_run_topology(const Options& o, bool ranks_given, bool per_node_given, const RunConfig& first,
                          const std::optional<ProjectionProfile>& profile, bool built) {
  if (ranks_given && o.ranks < 1) input_error("--ranks must be at least 1, got " + std::to_string(o.ranks));
  int world = o.ranks;
  if (!ranks_given) {
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    // One process (a login node's shell) checks the deck at the ranks it is written for.
    if (world == 1 && first.topology.world_size > 0) world = first.topology.world_size;
  }
  int per_node = first.topology.ranks_per_node;
  if (per_node_given)
    check_ranks_per_node(per_node = o.ranks_per_node, world, "--ranks-per-node");
  else if (per_node > 0)
    check_ranks_per_node(per_node, world, "topology.ranks_per_node");
  else
    per_node = !built && profile ? std::min(world, profile->gpus_per_node) : world;
  return Topology{world, per_node, per_node_given ? o.ranks_per_node : world};
}

// `run --dry-run`: expand and check the deck, print the points; nothing runs or is written.
// A deck for a device this build lacks is checked all the same (the backend on the
// topology, the memory estimate against its machine profile's device), saying which build
// runs it. Exit 2 (on every rank) when no point would run.
int dry_run(const Options& o, bool ranks_given, bool per_node_given) {
  std::vector<SweepPoint> points;
  std::vector<std::string> skipped;
  Topology topology;
  DryRunCapacity capacity;
  std::string unbuilt;
  bool built = true;
  if (!agree([&] {
        points = load_deck(o.deck).expand();
        const RunConfig& first = points.front().config;
        unbuilt = build_refusal(first.run.device);
        built = unbuilt.empty();
        const std::optional<ProjectionProfile> profile = deck_profile(first, o.deck.deck);
        topology = dry_run_topology(o, ranks_given, per_node_given, first, profile, built);
        skipped = skip_reasons(points, topology);
        capacity = dry_run_capacity(first, topology, profile, built);
      }))
    return 2;
  size_t runnable = 0, refused = 0, all_skipped = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    const std::string refusal = capacity.bytes < 0 ? "" : memory_refusal(p.config, topology, capacity.bytes);
    std::string line;
    if (!skipped[i].empty()) {
      ++all_skipped;
      line = "skipped: " + skipped[i];
    } else if (!refusal.empty()) {
      ++refused;
      line = "would be refused " + std::string(built ? "here" : "on its device") + ": " + refusal;
    } else {
      ++runnable;
      line = "runs, memory estimate " + std::to_string(estimate_memory_bytes(p.config, topology) >> 20) +
             " MiB per rank" +
             (capacity.bytes < 0
                  ? " (no device memory known here to check it against)"
                  : ", within the " + std::to_string(capacity.bytes >> 20) + " MiB of " + capacity.source);
    }
    if (world_rank() == 0) std::printf("%s: %s\n", describe(p, i).c_str(), line.c_str());
  }
  if (world_rank() == 0) {
    std::printf("dry run: %zu points, %zu run on %d ranks, %zu skipped", points.size(), runnable,
                topology.world_size, all_skipped);
    if (refused) std::printf(", %zu would be refused %s", refused, built ? "here" : "on their device");
    std::printf("\nnodes: %d of %d ranks\n", topology.nodes(), topology.ranks_per_node);
    if (!built) std::printf("runs with another build: %s\n", unbuilt.c_str());
    std::fflush(stdout);
  }
  if (all_skipped == points.size())
    return input_error_exit(nothing_runs(points, skipped, topology.world_size));
  return 0;
}

// Rank 0's results writer: on the claimed PATH, or (no PATH) on the first default name
// that no other job has taken.
void open_results_writer(std::string path, OnExisting mode, Provenance prov, RunSetup& s) {
  if (world_rank() != 0) return;
  if (!path.empty()) {
    if (mode == OnExisting::resume && exists(path)) check_resume(path, read_results(path), prov, s.points);
    s.writer = std::make_unique<ResultsWriter>(path, std::move(prov), mode, std::move(*s.claim));
    s.claim.reset();
    return;
  }
  // A default name: created exclusively; one that another job took first is skipped.
  constexpr int attempts = 100;
  for (int n = 1; !s.writer; ++n) {
    path = default_output_name("outputs", n);
    prepare_output_path(path, true, "results file");
    try {
      s.writer = std::make_unique<ResultsWriter>(path, prov, OnExisting::refuse);
    } catch (const OutputInUse&) {
      if (n == attempts) throw;
    } catch (const InputError&) {
      if (!exists(path) || n == attempts) throw;
    }
  }
}

// The start-up, as agreed steps: each step either throws only before its collectives or
// has none, so a failure on one rank never leaves another waiting. The output file is
// checked before any work, and only replaced or written once everything else is known.
bool set_up(const Options& o, const std::string& command_line, RunSetup& s) {
  std::string deck_yaml, deck_digest;
  if (!agree([&] {
        check_options(o);
        const Deck deck = load_deck(o.deck);
        deck_yaml = deck.to_yaml();
        deck_digest = deck_file_digest(o.deck.deck);
        s.points = deck.expand();
        // The start-up's waits (the comm's start) are bounded by the deck's limit too.
        watchdog::configure(s.points.front().config.run.watchdog_seconds);
      }))
    return false;
  const RunConfig& first = s.points.front().config;  // whole-run keys are the same at every point
  std::unique_ptr<MpiComm> mpi;
  if (!agree([&] {
        mpi = MpiComm::world(first.topology.ranks_per_node);
        if (first.topology.ranks_per_node != 0)
          check_ranks_per_node(first.topology.ranks_per_node, mpi->size(), "topology.ranks_per_node");
        s.skipped = skip_reasons(s.points, mpi->topology());
        if (std::all_of(s.skipped.begin(), s.skipped.end(), [](const std::string& r) { return !r.empty(); }))
          input_error(nothing_runs(s.points, s.skipped, mpi->size()));
      }))
    return false;

  std::string path = o.output.empty() ? first.output.file : o.output;
  OnExisting mode = on_existing(o, first);
  if (!agree([&] {
        if (mode == OnExisting::resume && path.empty())
          input_error("--resume needs the results file to continue: pass -o FILE (or set output.file)");
        if (world_rank() != 0) return;
        if (path.empty()) {  // the name is taken last, once nothing else can fail; its directory now
          prepare_output_path(default_output_name("outputs", 1), true, "results file");
          return;
        }
        // Claimed before it is checked, so a run racing this one is refused by its claim.
        prepare_output_path(path, true, "results file");
        s.claim = std::make_unique<OutputClaim>(path);
        prepare_output_path(path, mode != OnExisting::refuse, "results file");
      }))
    return false;

  if (!agree([&] {
        s.device = make_device(first.run.device, mpi->topology());
        // A kernel family this rank's GPU cannot run fails here, with every rank, not
        // at its point on this rank alone.
        for (size_t i = 0; i < s.points.size(); ++i)
          if (s.skipped[i].empty()) s.device->configure(DeviceSettings::of(s.points[i].config));
      }))
    return false;
  if (!agree([&] {
        // MPI decides the ranks; the comm run.comm names wraps it once the device exists.
        s.world = make_world_comm(first.run.comm, std::move(mpi), *s.device);
        for (size_t i = 0; i < s.points.size(); ++i)
          if (s.skipped[i].empty()) check_memory_estimate(s.points[i].config, *s.world, *s.device);
      }))
    return false;

  Provenance prov = collect_provenance(*s.world, *s.device, command_line, deck_yaml);
  if (!deck_digest.empty()) prov.text["deck_sha256"] = deck_digest;
  return agree([&] { open_results_writer(path, mode, std::move(prov), s); });
}

// The peak FLOP/s of this device when the deck says `machine.profile: measure`: each
// rank calibrates its own core; the mean is used.
double measured_peak(Comm& world, Device& device) {
  double tflops = measure_peak_tflops(device);
  world.all_reduce_sum(&tflops, 1);
  return tflops / world.size();
}

// What the verdict ending a FOM line stands for: a check in this run, a class
// measurement whose verification is a run of its own, or timing only.
std::string verdict_note(const PointResult& p, const RunConfig& cfg) {
  const BenchmarkConfig& b = cfg.benchmark;
  if (b.role == "verification")
    return p.verdict + " (verification run of class " + b.class_name + " at " +
           std::to_string(cfg.sequence.length) + " tokens, " + std::to_string(cfg.model.layers) +
           " layers, against " + p.reference + "; report --submission joins it to the class's measurement)";
  if (!p.reference.empty()) return p.verdict + " (verified in this run against " + p.reference + ")";
  if (!b.class_name.empty())
    return p.verdict +
           " (measurement; its verification: the same command with --set benchmark.role=verification)";
  return p.verdict + " (timing only: run.verify is off)";
}

std::string fom_line(const PointResult& p, const RunConfig& cfg) {
  namespace mk = schema::metric_key;
  namespace lk = schema::label_key;
  auto metric = [&](const char* key, int decimals, double scale = 1.0) {
    const auto it = p.metrics.find(key);
    return it == p.metrics.end() ? std::string("n/a") : format_number(it->second * scale, decimals);
  };
  const BenchmarkConfig& b = cfg.benchmark;
  std::ostringstream s;
  s << (b.role == "verification" ? "VERIFICATION" : "FOM");
  if (!b.class_name.empty()) s << " class=" << b.class_name;
  s << " backend=" << p.labels.at(lk::backend) << " ring_type=" << p.labels.at(lk::ring_type)
    << " world=" << p.labels.at(lk::world_size) << " seq=" << p.labels.at(lk::seq_len)
    << " tokens/s=" << metric(mk::tokens_per_s, 1)
    << " tokens/s/device=" << metric(mk::tokens_per_s_per_device, 1)
    << " TFLOPS/device=" << metric(mk::tflops_per_device, 4)
    << " MFU(MPT,full-mask)=" << metric(mk::mfu, 2, 100.0) << "% peak_MB=" << metric(mk::peak_memory_mb, 1)
    << " " << verdict_note(p, cfg);
  return s.str();
}

// The steps a dynamic loss scale ran again after an overflow, for a reviewer reading the
// log; "" when there were none.
std::string overflow_note(const PointResult& p) {
  namespace mk = schema::metric_key;
  const auto steps = p.metrics.find(mk::overflow_steps), scale = p.metrics.find(mk::loss_scale);
  if (steps == p.metrics.end() || steps->second == 0 || scale == p.metrics.end()) return "";
  char line[256];
  std::snprintf(line, sizeof line,
                "loss scale: %.0f step(s) ran again after their gradients overflowed, the scale halved each "
                "time; it ended at %.0f (metrics overflow_steps, loss_scale)",
                steps->second, scale->second);
  return line;
}

// One point on every rank: measured, and verified when its deck says so, or the
// recorded reason it was skipped. `peak` caches a measured peak FLOP/s across points.
PointResult run_one_point(const SweepPoint& point, const std::string& skipped, RunSetup& s, double& peak) {
  RunConfig cfg = point.config;
  s.device->configure(DeviceSettings::of(cfg));
  if (cfg.machine.measures_peak() && cfg.machine.peak_tflops <= 0) {
    if (peak <= 0) peak = measured_peak(*s.world, *s.device);
    cfg.machine.peak_tflops = peak;
  }
  PointResult result;
  result.skipped_reason = skipped;
  if (skipped.empty()) {
    try {
      result = run_point(cfg, *s.world, *s.device, stop_if_interrupted);
      result.verdict = "UNVERIFIED";
      if (cfg.run.verify) {
        const Verification v = verify_point(cfg, *s.world, *s.device, cfg.run.reference);
        result.verdict = v.valid ? "VALID" : "INVALID";
        result.reference = v.reference;
        result.verification = v.rows;
      }
    } catch (const PointRefused& e) {  // on every rank alike; a single point's is the run's error
      if (s.points.size() == 1) throw;
      result = PointResult{};
      result.skipped_reason = e.what();
    }
  }
  if (!result.skipped_reason.empty()) result.verdict = "SKIPPED";
  result.deck = point.resolved_yaml;
  result.labels = point_labels(cfg, s.world->topology());
  return result;
}

// Every point not in the file yet, in order, each committed to the file as it completes.
// False (on every rank, the error printed) when a point could not be written.
bool run_points(RunSetup& s) {
  const int rank = world_rank();
  const size_t total = s.points.size();
  // Which points are in the file already (--resume): rank 0 owns the writer.
  std::vector<int> done(total, 0);
  if (rank == 0)
    for (size_t i = 0; i < total; ++i) done[i] = s.writer->has_point(point_name(i));
  MPI_Bcast(done.data(), int(done.size()), MPI_INT, 0, MPI_COMM_WORLD);
  size_t to_run = 0;
  for (size_t i = 0; i < total; ++i) to_run += !done[i] && s.skipped[i].empty();

  double peak = 0;
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto since = [](clock::time_point t) {
    return std::chrono::duration<double>(clock::now() - t).count();
  };
  Progress progress(total, to_run);
  for (size_t i = 0; i < total; ++i) {
    const std::string what = describe(s.points[i], i);
    if (done[i]) {
      if (rank == 0)
        std::printf("[%zu/%zu] %s: in the file already (--resume)\n", i + 1, total, what.c_str());
      continue;
    }
    stop_if_interrupted();
    if (rank == 0) {
      std::printf("%s\n", progress.line(i, what, since(start)).c_str());
      std::fflush(stdout);
    }
    const auto point_start = clock::now();
    watchdog::set_point(what);
    fault_seam::set_point(int(i));
    PointResult result = run_one_point(s.points[i], s.skipped[i], s, peak);
    if (s.skipped[i].empty()) progress.finished(since(point_start));
    result.name = point_name(i);
    // A write that fails (a full disk, the file replaced under the run) stops every rank.
    if (!agree([&] {
          if (rank == 0) s.writer->add_point(result);
        }))
      return false;
    if (rank == 0) {
      if (result.skipped_reason.empty()) {
        std::printf("%s\n", fom_line(result, s.points[i].config).c_str());
        if (const std::string note = overflow_note(result); !note.empty()) std::printf("%s\n", note.c_str());
      } else
        std::printf("skipped: %s\n", result.skipped_reason.c_str());
      std::fflush(stdout);
    }
  }
  // The points appended during the sweep join the file's HDF5 part.
  return agree([&] {
    if (rank == 0) s.writer->finish();
  });
}

// The one line a stopped sweep ends with, and its exit code (128 + signal, as a shell).
int report_interrupt(const Interrupted& stop, ResultsWriter* writer, size_t total) {
  if (world_rank() == 0) {
    try {
      writer->finish();
    } catch (const Error& e) {  // the points are in the file all the same
      std::fprintf(stderr, "minictx: warning: %s\n", e.what());
    }
    if (writer->written())
      std::fprintf(stderr,
                   "minictx: %s: sweep interrupted with %zu of %zu points in %s; run the same command with "
                   "--resume to continue it\n",
                   stop.what(), writer->points().size(), total, writer->path().c_str());
    else
      std::fprintf(stderr,
                   "minictx: %s: sweep interrupted before its first point; %s keeps its previous results\n",
                   stop.what(), writer->path().c_str());
    std::fflush(stderr);
  }
  return 128 + stop.signal();
}

void print_summary(const ResultsWriter& writer) {
  std::printf("\n%s\nresults: %s\n", render(summary_table(writer.points()), TableFormat::markdown).c_str(),
              writer.path().c_str());
}

}  // namespace

RunCommand::RunCommand(CLI::App& app) {
  cmd_ = app.add_subcommand("run", "run a deck (benchmark), write HDF5 results, print the table");
  add_deck_options(cmd_, o_.deck);
  cmd_->add_option("-o,--output", o_.output,
                   "results file (default: output.file or outputs/minictx-<date>-<time>-<job or pid>.h5)");
  cmd_->add_flag("--force", o_.force,
                 "replace an existing results file (kept until the first new point is written)");
  cmd_->add_flag(
      "--resume", o_.resume,
      "continue an existing results file of the same deck, build and ranks: run only its missing points");
  auto* dry = cmd_->add_flag("--dry-run", o_.dry_run,
                             "expand and check the deck, list its points; run and write nothing");
  ranks_option_ =
      cmd_->add_option("--ranks", o_.ranks,
                       "with --dry-run: check the points for this many ranks (default: this run's)")
          ->check(whole_number_from(1))
          ->needs(dry);
  ranks_per_node_option_ =
      cmd_->add_option(
              "--ranks-per-node", o_.ranks_per_node,
              "with --dry-run: ranks per node (default: the deck's topology.ranks_per_node, else one node)")
          ->check(whole_number_from(1))
          ->needs(dry);
}

int RunCommand::run(const std::string& command_line) {
  if (o_.dry_run) return dry_run(o_, ranks_option_->count() > 0, ranks_per_node_option_->count() > 0);
  RunSetup s;
  if (!set_up(o_, command_line, s)) return 2;
  // Only a run checks for signals; every other command keeps the default (immediate) exit.
  install_interrupt_handlers();
  try {
    if (!run_points(s)) return 2;
  } catch (const Interrupted& stop) {
    return report_interrupt(stop, s.writer.get(), s.points.size());
  } catch (const PointRefused& e) {
    return input_error_exit(e.what());
  }
  if (world_rank() == 0) print_summary(*s.writer);
  return 0;
}

}  // namespace minictx
