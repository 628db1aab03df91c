#include "app/project_command.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "app/agree.hpp"
#include "app/count_option.hpp"
#include "app/output_path.hpp"
#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "bench/labels.hpp"
#include "bench/metrics.hpp"
#include "build_info.hpp"
#include "config/deck.hpp"
#include "config/machine_profile.hpp"
#include "core/error.hpp"
#include "io/results_schema.hpp"
#include "io/results_writer.hpp"
#include "project/calibration.hpp"
#include "project/step_model.hpp"
#include "report/report.hpp"

namespace minictx {
namespace {

namespace lk = schema::label_key;

constexpr int kPerRankRecords = 1 << 16;

// The seed table a deck reproduces: the column set named after its one backend, if any.
std::string default_columns(const std::vector<SweepPoint>& points) {
  std::string b = points.front().config.attention.backend;
  for (const auto& p : points)
    if (p.config.attention.backend != b) return "summary";
  for (const ColumnSet& set : column_sets())
    if (b == set.name) return b;
  return "summary";
}

Provenance projection_provenance(const std::string& command_line, const std::string& deck_yaml,
                                 const ProjectionProfile& profile,
                                 const std::vector<std::string>& calibration, const Topology& topology) {
  Provenance p;
  p.text["version"] = build::version;
  p.text["git_sha"] = build::git_sha;
  p.text["command_line"] = command_line;
  p.text["deck"] = deck_yaml;
  p.text["projected"] = "true";
  p.text["machine_profile"] = profile.file;
  p.text["machine_name"] = profile.name;
  for (const auto& [group, source] : profile.sources) p.text["machine_source." + group] = source;
  for (size_t i = 0; i < calibration.size(); ++i) p.text["calibration." + std::to_string(i)] = calibration[i];
  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  p.text["date"] = date;
  p.numbers["world_size"] = topology.world_size;
  p.numbers["ranks_per_node"] = topology.ranks_per_node;
  p.numbers["nodes"] = topology.nodes();
  return p;
}

// The world size is --ranks or the deck's; the ranks per node --ranks-per-node, else the
// deck's, else the profile's devices per node.
Topology projection_topology(int ranks, int ranks_per_node, const RunConfig& cfg,
                             const ProjectionProfile& profile) {
  const int world = ranks > 0 ? ranks : cfg.topology.world_size;
  if (world <= 0) input_error("the deck has no topology.world_size: give the world size with --ranks N");
  const int per_node = std::min(world, ranks_per_node > 0                ? ranks_per_node
                                       : cfg.topology.ranks_per_node > 0 ? cfg.topology.ranks_per_node
                                                                         : profile.gpus_per_node);
  return Topology{world, per_node};
}

// One point projected on `topology` as a results point: PROJECTED, or SKIPPED when its
// backend refuses the topology (an error when it is the deck's only point).
PointResult project_point(const SweepPoint& point, const std::string& name, const Topology& topology,
                          const ProjectionProfile& profile, bool only_point) {
  const auto start = std::chrono::steady_clock::now();
  RunConfig cfg = point.config;
  const int world = topology.world_size;
  const KernelRates rates(profile, cfg.run.dtype);
  cfg.machine.name = profile.name;
  cfg.machine.peak_tflops = rates.peak_flops() / 1e12;
  cfg.topology.world_size = world;
  cfg.topology.ranks_per_node = topology.ranks_per_node;

  PointResult r;
  r.name = name;
  r.deck = point.resolved_yaml;
  r.labels = point_labels(cfg, topology);
  r.labels[lk::projected] = "true";
  try {
    validate_backend(cfg, topology);
  } catch (const InputError& e) {
    if (only_point) throw;
    r.skipped_reason = e.what();
    r.verdict = "SKIPPED";
    return r;
  }
  const StepProjection s = project_step(cfg, topology, rates, {profile.intra, profile.inter},
                                        profile.memory_gib * double(1 << 30));
  r.iters = 1;
  r.ranks = world;
  // Every rank alike: the per-rank datasets repeat one figure, so past kPerRankRecords
  // ranks (where they would take gigabytes) they stay empty and the metrics carry it.
  if (world <= kPerRankRecords) {
    r.iter_seconds.assign(size_t(world), s.total.seconds());
    for (const auto& [phase, seconds] : s.phases) r.phase_seconds[phase].assign(size_t(world), seconds);
    r.peak_memory_bytes.assign(size_t(world), s.memory_bytes);
    r.bytes_sent_intra.assign(size_t(world), s.total.bytes_intra);
    r.bytes_sent_inter.assign(size_t(world), s.total.bytes_inter);
  }
  r.metrics = uniform_metrics(cfg, world, s.total.seconds(), s.memory_bytes, s.total.bytes_intra,
                              s.total.bytes_inter);
  for (const auto& [term, seconds] : s.terms) r.metrics[schema::projected_metric(term)] = seconds;
  for (const auto& [pass, step] : s.ring_steps) {
    r.metrics[schema::projected_ring_step_metric(pass, "compute")] = step.compute;
    r.metrics[schema::projected_ring_step_metric(pass, "transfer")] = step.transfer;
    r.metrics[schema::projected_ring_step_metric(pass, "exposed")] = step.exposed;
  }
  r.metrics["memory_capacity_mb"] = s.memory_capacity_bytes / double(1 << 20);
  r.labels[lk::bound] = s.bound;
  r.labels[lk::fits] = s.fits ? "yes" : "no";
  r.verdict = "PROJECTED";
  r.metrics["projection_seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// The second table: each projected point's step split by term, its bound and whether it fits.
Table bounds_table(const std::vector<PointResult>& results) {
  Table bounds;
  bounds.header = {"point",
                   "step (s)",
                   "bound",
                   "attention fwd (s)",
                   "attention bwd (s)",
                   "of which all-to-all (s)",
                   "GEMM (s)",
                   "element-wise (s)",
                   "recompute (s)",
                   "grad all-reduce (s)",
                   "exposed intra (s)",
                   "exposed inter (s)",
                   "memory MiB/device",
                   "fits"};
  for (const auto& r : results) {
    if (!r.skipped_reason.empty()) continue;
    auto m = [&](const std::string& k) {
      const auto it = r.metrics.find(k);
      return it == r.metrics.end() ? std::string("n/a") : format_number(it->second, 4);
    };
    auto term = [&](const char* t) { return m(schema::projected_metric(t)); };
    namespace pt = schema::projected_term;
    bounds.rows.push_back(
        {r.name, m(schema::metric_key::step_seconds), r.labels.at(lk::bound), term(pt::attention_fwd),
         term(pt::attention_bwd), term(pt::all_to_all), term(pt::gemm), term(pt::elementwise),
         term(pt::recompute), term(pt::grad_allreduce), term(pt::exposed_intra), term(pt::exposed_inter),
         format_number(r.metrics.at(schema::metric_key::peak_memory_mb), 0), r.labels.at(lk::fits)});
  }
  return bounds;
}

}  // namespace

ProjectCommand::ProjectCommand(CLI::App& app) {
  cmd_ = app.add_subcommand("project",
                            "project a deck's step time, throughput, memory and bytes on a machine profile");
  cmd_->add_option("deck", deck_, "input deck (YAML)")->required();
  cmd_->add_option("--set", sets_, "override a deck key: --set sequence.length=4096 (repeatable)");
  cmd_->add_option("--machine", machine_, "machine profile: a name in inputs/machines/ or a YAML path")
      ->required();
  cmd_->add_option("--ranks", ranks_, "world size (default: the deck's topology.world_size)")
      ->check(whole_number_from(1));
  cmd_->add_option(
          "--ranks-per-node", ranks_per_node_,
          "ranks per node (default: the deck's topology.ranks_per_node, else the profile's devices per node)")
      ->check(whole_number_from(1));
  cmd_->add_option(
      "--calibration", calibration_,
      "HDF5 file of `minictx bench` or `bench --comm` rates to use in place of the profile's (repeatable)");
  cmd_->add_option("-o,--output", output_, "write the projected points to this results file");
  cmd_->add_flag("--force", force_, "replace an existing results file");
  cmd_->add_option("--columns", columns_, "column set of the printed table (default: the deck's seed table)");
}

int ProjectCommand::run(const std::string& command_line) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // Every rank computes the same thing; only rank 0 prints and writes, and what fails there
  // (the output file) is shared, so every rank exits alike. No collective inside.
  return agree([&] {
    Deck deck = Deck::from_file(deck_);
    for (const auto& s : sets_) deck.set(s);
    const std::vector<SweepPoint> points = deck.expand();
    const auto deck_dir = std::filesystem::absolute(deck_).parent_path();
    ProjectionProfile profile = load_projection_profile(machine_, deck_dir);
    for (const auto& c : calibration_) apply_calibration(profile, c);
    const std::string columns = columns_.empty() ? default_columns(points) : columns_;
    make_table(columns, {});  // an unknown column set fails before any work
    if (rank == 0 && !output_.empty()) prepare_output_path(output_, force_, "-o");

    std::unique_ptr<ResultsWriter> writer;
    std::vector<PointResult> results;
    results.reserve(points.size());
    for (size_t i = 0; i < points.size(); ++i) {
      const Topology topology = projection_topology(ranks_, ranks_per_node_, points[i].config, profile);
      results.push_back(project_point(points[i], point_name(i), topology, profile, points.size() == 1));
      if (rank == 0 && !output_.empty()) {
        if (!writer)
          writer = std::make_unique<ResultsWriter>(
              output_, projection_provenance(command_line, deck.to_yaml(), profile, calibration_, topology),
              force_ ? OnExisting::replace : OnExisting::refuse);
        writer->add_point(results.back());
      }
    }
    if (writer) writer->finish();
    if (rank == 0) {
      std::printf("projected on %s (%s)\n%s", profile.name.c_str(), profile.file.c_str(),
                  render(make_table(columns, results), TableFormat::markdown).c_str());
      std::printf("\n%s", render(bounds_table(results), TableFormat::markdown).c_str());
      if (writer) std::printf("results: %s\n", writer->path().c_str());
    }
  })
             ? 0
             : 2;
}

}  // namespace minictx
