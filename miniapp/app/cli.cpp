#include "app/cli.hpp"

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <climits>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <sstream>

#include "app/bench_command.hpp"
#include "app/interrupt.hpp"
#include "app/labels.hpp"
#include "app/progress.hpp"
#include "app/provenance.hpp"
#include "backends/backend.hpp"
#include "bench/calibration.hpp"
#include "bench/runner.hpp"
#include "build_info.hpp"
#include "comm/comm_factory.hpp"
#include "comm/mpi_comm.hpp"
#include "config/deck.hpp"
#include "core/error.hpp"
#include "device/blas_kernels.hpp"
#include "device/device.hpp"
#include "driver/verification.hpp"
#include "io/report.hpp"
#include "io/results_reader.hpp"
#include "io/results_writer.hpp"
#include "io/table.hpp"

namespace minictx {
namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// Runs `f` on every rank. If it throws anywhere, every rank learns the first failing
// rank's message, rank 0 prints it as one line, and all return false together: bad
// input never leaves one rank hanging while another exits.
bool agree(const std::function<void()>& f) {
  std::string message;
  int failed_rank = INT_MAX;
  try {
    f();
  } catch (const std::exception& e) {
    message = e.what();
    failed_rank = world_rank();
  }
  int first = INT_MAX;
  MPI_Allreduce(&failed_rank, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == INT_MAX) return true;
  int len = int(message.size());
  MPI_Bcast(&len, 1, MPI_INT, first, MPI_COMM_WORLD);
  message.resize(size_t(len));
  MPI_Bcast(message.data(), len, MPI_CHAR, first, MPI_COMM_WORLD);
  if (world_rank() == 0) std::fprintf(stderr, "minictx: error: %s\n", message.c_str());
  return false;
}

struct DeckOptions {
  std::string deck;
  std::vector<std::string> sets;
};

void add_deck_options(CLI::App* cmd, DeckOptions& o) {
  cmd->add_option("deck", o.deck, "input deck (YAML); none = the built-in quickstart deck");
  cmd->add_option("--set", o.sets, "override a deck key: --set sequence.length=4096 (repeatable)");
}

Deck load_deck(const DeckOptions& o) {
  Deck deck = o.deck.empty() ? Deck::builtin_quickstart() : Deck::from_file(o.deck);
  for (const auto& s : o.sets) deck.set(s);
  return deck;
}

std::string default_output_path() {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return std::string("outputs/minictx-") + stamp + ".h5";
}

std::string point_name(size_t i) {
  char name[32];
  std::snprintf(name, sizeof name, "point_%04zu", i);
  return name;
}

// The peak FLOP/s of this device when the deck says `machine.profile: measure`: each
// rank calibrates its own core; the mean is used.
double measured_peak(Comm& world, Device& device) {
  double tflops = measure_gemm_tflops(device);
  world.all_reduce_sum(&tflops, 1);
  return tflops / world.size();
}

std::string fom_line(const PointResult& p) {
  auto metric = [&](const char* key, int decimals, double scale = 1.0) {
    const auto it = p.metrics.find(key);
    return it == p.metrics.end() ? std::string("n/a") : format_number(it->second * scale, decimals);
  };
  std::ostringstream s;
  s << "FOM backend=" << p.labels.at("backend") << " ring_type=" << p.labels.at("ring_type")
    << " world=" << p.labels.at("world_size") << " seq=" << p.labels.at("seq_len")
    << " tokens/s=" << metric("tokens_per_s", 1) << " TFLOPS/device=" << metric("tflops_per_device", 4)
    << " MFU=" << metric("mfu", 2, 100.0) << "% peak_MB=" << metric("peak_memory_mb", 1) << " " << p.verdict;
  return s.str();
}

void print_verification(const Verification& v) {
  Table t;
  t.header = {"tensor", "max abs err", "max rel err", "rmse", "tolerance", "ok"};
  for (const auto& r : v.rows)
    t.rows.push_back({r.tensor, format_number(r.max_abs_err, 3), format_number(r.max_rel_err, 3),
                      format_number(r.rmse, 3), format_number(r.tolerance, 3), r.pass ? "yes" : "NO"});
  std::printf("%s", render(t, TableFormat::markdown).c_str());
}

struct RunOptions {
  DeckOptions deck;
  std::string output;
  bool force = false;
  bool resume = false;
  bool dry_run = false;
  int ranks = 0;           // --dry-run: the world size to check the points against; 0 = this one
  int ranks_per_node = 0;  // --dry-run: 0 = the deck's topology.ranks_per_node, else one node
};

// For each point: "" if it runs on this topology, else why not. A single point that
// cannot run is an error; inside a sweep it is a recorded skip.
std::vector<std::string> skip_reasons(const std::vector<SweepPoint>& points, const Topology& topology) {
  std::vector<std::string> reasons;
  for (const auto& p : points) {
    std::string reason;
    try {
      validate_backend(p.config, topology);
    } catch (const InputError& e) {
      if (points.size() == 1) throw;
      reason = e.what();
    }
    reasons.push_back(reason);
  }
  return reasons;
}

// `run --dry-run`: expand and check the deck, print the points; nothing runs or is written.
int cmd_dry_run(const RunOptions& o) {
  std::vector<SweepPoint> points;
  std::vector<std::string> skipped;
  Topology topology;
  if (!agree([&] {
        points = load_deck(o.deck).expand();
        int world = o.ranks;
        if (world <= 0) MPI_Comm_size(MPI_COMM_WORLD, &world);
        int per_node = o.ranks_per_node > 0 ? o.ranks_per_node : points.front().config.topology.ranks_per_node;
        if (per_node <= 0) per_node = world;
        topology = Topology{world, per_node};
        skipped = skip_reasons(points, topology);
      }))
    return 2;
  if (world_rank() != 0) return 0;
  size_t runnable = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    const std::string what = p.label.empty() ? p.config.attention.backend : p.label;
    if (skipped[i].empty()) {
      ++runnable;
      std::printf("%s %s: runs, memory estimate %lld MiB per rank\n", point_name(i).c_str(), what.c_str(),
                  static_cast<long long>(estimate_memory_bytes(p.config, topology) >> 20));
    } else {
      std::printf("%s %s: skipped: %s\n", point_name(i).c_str(), what.c_str(), skipped[i].c_str());
    }
  }
  std::printf("dry run: %zu points, %zu run on %d ranks, %zu skipped\n", points.size(), runnable, topology.world_size,
              points.size() - runnable);
  return 0;
}

// The one line a stopped sweep ends with, and its exit code (128 + signal, as a shell).
int report_interrupt(const Interrupted& stop, const ResultsWriter* writer, size_t total) {
  if (world_rank() == 0) {
    std::fprintf(stderr,
                 "minictx: %s: sweep interrupted with %zu of %zu points in %s; run the same command with "
                 "--resume to continue it\n",
                 stop.what(), writer->points().size(), total, writer->path().c_str());
    std::fflush(stderr);
  }
  return 128 + stop.signal();
}

int cmd_run(const RunOptions& o, const std::string& command_line) {
  if (o.dry_run) return cmd_dry_run(o);
  const int rank = world_rank();
  std::vector<SweepPoint> points;
  std::vector<std::string> skipped;
  std::unique_ptr<Comm> world;
  std::unique_ptr<Device> device;
  std::unique_ptr<ResultsWriter> writer;
  std::string deck_yaml;
  if (!agree([&] {
        const Deck deck = load_deck(o.deck);
        deck_yaml = deck.to_yaml();
        points = deck.expand();
        // MPI decides the ranks; the comm run.comm names wraps it once the device exists.
        auto mpi = MpiComm::world(points.front().config.topology.ranks_per_node);
        skipped = skip_reasons(points, mpi->topology());
        device = make_device(points.front().config.run.device);
        world = make_world_comm(points.front().config.run.comm, std::move(mpi), *device);
        for (size_t i = 0; i < points.size(); ++i)
          if (skipped[i].empty()) check_memory_estimate(points[i].config, *world, *device);
        if (rank == 0) {
          std::string path = o.output;
          if (path.empty()) path = points.front().config.output.file;
          if (path.empty()) path = default_output_path();
          const auto dir = std::filesystem::path(path).parent_path();
          if (!dir.empty()) std::filesystem::create_directories(dir);
          const bool overwrite = o.force || points.front().config.output.overwrite;
          writer = std::make_unique<ResultsWriter>(path, collect_provenance(*world, *device, command_line, deck_yaml),
                                                   overwrite, o.resume);
        } else {
          collect_provenance(*world, *device, command_line, deck_yaml);
        }
      }))
    return 2;

  // Only a run checks for signals; every other command keeps the default (immediate) exit.
  install_interrupt_handlers();

  // Which points are already in the file (--resume): rank 0 owns the writer.
  std::vector<int> done(points.size(), 0);
  if (rank == 0)
    for (size_t i = 0; i < points.size(); ++i) done[i] = writer->has_point(point_name(i));
  MPI_Bcast(done.data(), int(done.size()), MPI_INT, 0, MPI_COMM_WORLD);
  size_t to_run = 0;
  for (size_t i = 0; i < points.size(); ++i) to_run += !done[i] && skipped[i].empty();

  double peak = 0;
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  Progress progress(points.size(), to_run);
  try {
    for (size_t i = 0; i < points.size(); ++i) {
      RunConfig cfg = points[i].config;
      const std::string name = point_name(i);
      const std::string what = name + " " + (points[i].label.empty() ? cfg.attention.backend : points[i].label);
      if (done[i]) {
        if (rank == 0) std::printf("[%zu/%zu] %s: in the file already (--resume)\n", i + 1, points.size(), what.c_str());
        continue;
      }
      stop_if_interrupted();
      device->set_precision(cfg.run.dtype);
      if (cfg.machine.profile == "measure" && cfg.machine.peak_tflops <= 0) {
        if (peak <= 0) peak = measured_peak(*world, *device);
        cfg.machine.peak_tflops = peak;
      }
      if (rank == 0) {
        std::printf("%s\n", progress.line(i, what, since(start)).c_str());
        std::fflush(stdout);
      }
      const auto point_start = clock::now();
      PointResult result;
      if (!skipped[i].empty()) {
        result.skipped_reason = skipped[i];
        result.verdict = "SKIPPED";
      } else {
        result = run_point(cfg, *world, *device, stop_if_interrupted);
        result.verdict = "UNVERIFIED";
        if (cfg.run.verify) {
          const Verification v = verify_point(cfg, *world, *device, cfg.run.reference);
          result.verdict = v.valid ? "VALID" : "INVALID";
          result.reference = v.reference;
          result.verification = v.rows;
        }
        progress.finished(since(point_start));
      }
      result.name = name;
      result.deck = points[i].resolved_yaml;
      result.labels = point_labels(cfg, world->topology());
      if (rank == 0) {
        writer->add_point(result);
        if (result.skipped_reason.empty())
          std::printf("%s\n", fom_line(result).c_str());
        else
          std::printf("skipped: %s\n", result.skipped_reason.c_str());
        std::fflush(stdout);
      }
    }
  } catch (const Interrupted& stop) {
    return report_interrupt(stop, writer.get(), points.size());
  }
  if (rank == 0) {
    std::printf("\n%s\nresults: %s\n", render(summary_table(writer->points()), TableFormat::markdown).c_str(),
                writer->path().c_str());
  }
  return 0;
}

struct VerifyOptions {
  DeckOptions deck;
  std::string reference;
  std::string dump;
  std::vector<std::string> points;  // --point: each one more list of overrides
};

// The points to verify: the deck's own, or with --point, each group of overrides on top
// of the deck and --set (a group may itself sweep), labelled by its overrides.
std::vector<SweepPoint> verify_points(const VerifyOptions& o) {
  if (o.points.empty()) return load_deck(o.deck).expand();
  std::vector<SweepPoint> points;
  for (const auto& group : o.points) {
    Deck deck = load_deck(o.deck);
    std::istringstream overrides(group);
    for (std::string s; overrides >> s;) deck.set(s);
    for (auto& p : deck.expand()) {
      p.label = group + (p.label.empty() ? "" : " " + p.label);
      points.push_back(std::move(p));
    }
  }
  return points;
}

// Each point's own topology.ranks_per_node and run.comm: one launch may verify points
// of several emulated node sizes.
std::unique_ptr<Comm> point_world(const RunConfig& cfg, Device& device) {
  return make_world_comm(cfg.run.comm, MpiComm::world(cfg.topology.ranks_per_node), device);
}

int cmd_verify(const VerifyOptions& o) {
  std::vector<SweepPoint> points;
  std::unique_ptr<Comm> world;
  std::unique_ptr<Device> device;
  if (!agree([&] {
        points = verify_points(o);
        if (!o.dump.empty() && points.size() > 1) input_error("--dump takes a deck with a single point");
        if (!o.dump.empty() && std::filesystem::exists(o.dump))
          input_error("--dump " + o.dump + ": file exists; remove it or choose another name");
        if (!o.reference.empty() && o.reference != "fp64" && o.reference != "single-device")
          input_error("--reference must be fp64 or single-device, not '" + o.reference + "'");
        device = make_device(points.front().config.run.device);
        for (const auto& p : points) {
          if (p.config.run.device != points.front().config.run.device)
            input_error("verify runs one run.device per launch, but the points name " +
                        points.front().config.run.device + " and " + p.config.run.device);
          const auto mpi = MpiComm::world(p.config.topology.ranks_per_node);
          validate_backend(p.config, mpi->topology());
          check_memory_estimate(p.config, *mpi, *device);
        }
        world = point_world(points.front().config, *device);
      }))
    return 2;
  bool all_valid = true;
  const RunConfig* world_of = &points.front().config;
  for (const auto& p : points) {
    const std::string reference = o.reference.empty() ? p.config.run.reference : o.reference;
    if (p.config.topology.ranks_per_node != world_of->topology.ranks_per_node ||
        p.config.run.comm != world_of->run.comm) {
      world = point_world(p.config, *device);
      world_of = &p.config;
    }
    device->set_precision(p.config.run.dtype);
    const Verification v = verify_point(p.config, *world, *device, reference, o.dump);
    all_valid = all_valid && v.valid;
    if (world_rank() == 0) {
      std::printf("verify %s backend=%s world=%d against %s%s%s\n", p.config.run.mode == Mode::model ? "model" : "attention",
                  p.config.attention.backend.c_str(), world->size(), reference.c_str(),
                  p.label.empty() ? "" : " at ", p.label.c_str());
      print_verification(v);
      std::printf("%s\n", v.valid ? "VALID" : "INVALID");
      std::fflush(stdout);
    }
  }
  return all_valid ? 0 : 1;
}

struct ReportOptions {
  std::vector<std::string> files;
  std::string format = "md";
  std::string columns = "summary";
};

int cmd_report(const ReportOptions& o) {
  if (world_rank() != 0) return 0;
  std::vector<PointResult> points;
  for (const auto& f : o.files) {
    ResultsFile r = read_results(f);
    points.insert(points.end(), r.points.begin(), r.points.end());
  }
  std::printf("%s", render(make_table(o.columns, points), parse_table_format(o.format)).c_str());
  return 0;
}

int cmd_list() {
  if (world_rank() != 0) return 0;
  std::printf("backends:\n");
  for (const auto& b : backend_registry()) std::printf("  %-12s %s\n", b.name.c_str(), b.summary.c_str());
  std::printf("devices:\n");
  for (const auto& d : device_names()) std::printf("  %s\n", d.c_str());
  std::printf("comms:\n");
  for (const auto& c : comm_names()) std::printf("  %s\n", c.c_str());
  std::printf("model presets:\n");
  for (const auto& p : model_presets()) std::printf("  %s\n", p.c_str());
  std::printf("report column sets:\n");
  for (const auto& t : table_names()) std::printf("  %s\n", t.c_str());
  std::printf("blas:\n  %s\n", blas_description().c_str());
  return 0;
}

int dispatch(int argc, char** argv) {
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);

  CLI::App app{"minictx: a mini-app for sequence-parallel long-context transformer training"};
  app.set_version_flag("--version", std::string("minictx ") + build::version + " (" + build::git_sha +
                                        (build::git_dirty ? ", dirty" : "") + ")");
  app.require_subcommand(1);
  RunOptions run;
  auto* run_cmd = app.add_subcommand("run", "run a deck (benchmark), write HDF5 results, print the table");
  add_deck_options(run_cmd, run.deck);
  run_cmd->add_option("-o,--output", run.output, "results file (default: output.file or outputs/minictx-<time>.h5)");
  run_cmd->add_flag("--force", run.force, "replace an existing results file");
  run_cmd->add_flag("--resume", run.resume, "keep the completed points of an existing results file, run the rest");
  auto* dry_run = run_cmd->add_flag("--dry-run", run.dry_run, "expand and check the deck, list its points; run and write nothing");
  run_cmd->add_option("--ranks", run.ranks, "with --dry-run: check the points for this many ranks (default: this run's)")
      ->check(CLI::PositiveNumber)
      ->needs(dry_run);
  run_cmd->add_option("--ranks-per-node", run.ranks_per_node,
                      "with --dry-run: ranks per node (default: the deck's topology.ranks_per_node, else one node)")
      ->needs(dry_run);
  VerifyOptions verify;
  auto* verify_cmd = app.add_subcommand("verify", "check a backend's outputs and gradients against a reference");
  add_deck_options(verify_cmd, verify.deck);
  verify_cmd->add_option("--reference", verify.reference, "fp64 (independent golden code) or single-device");
  verify_cmd->add_option("--dump", verify.dump, "write global inputs, weights, outputs and gradients to this HDF5 file");
  verify_cmd->add_option("--point", verify.points,
                         "verify one more point: space-separated overrides on top of the deck and --set, "
                         "e.g. --point \"attention.ring_type=zigzag sequence.length=998\" (repeatable)");
  ReportOptions report;
  auto* report_cmd = app.add_subcommand("report", "print the table of one or more results files");
  report_cmd->add_option("files", report.files, "results files")->required();
  report_cmd->add_option("--format", report.format, "md | csv");
  report_cmd->add_option("--columns", report.columns, "column set: summary | usp | double_ring | mpt | burst");
  auto* list_cmd = app.add_subcommand("list", "list the backends, devices and comms compiled in");
  BenchCommand bench(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank parsed the same arguments, so every rank exits alike: --help and
    // --version print and exit 0; a bad command line is one error line and status 2.
    if (e.get_exit_code() == 0) return world_rank() == 0 ? app.exit(e) : 0;
    if (world_rank() == 0) std::fprintf(stderr, "minictx: error: %s (see --help)\n", e.what());
    return 2;
  }
  if (*run_cmd) return cmd_run(run, command_line);
  if (*verify_cmd) return cmd_verify(verify);
  if (*report_cmd) {
    int code = 0;
    return agree([&] { code = cmd_report(report); }) ? code : 2;
  }
  if (*list_cmd) return cmd_list();
  if (bench.selected()) return bench.run(command_line);
  return 2;
}

}  // namespace

int cli_main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int code = 0;
  try {
    code = dispatch(argc, argv);
  } catch (const std::exception& e) {
    // A failure past the agreed checks may be on this rank alone: abort them all.
    std::fprintf(stderr, "minictx: error on rank %d: %s\n", world_rank(), e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Finalize();
  return code;
}

}  // namespace minictx
