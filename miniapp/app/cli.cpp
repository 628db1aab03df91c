#include "app/cli.hpp"

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/agree.hpp"
#include "app/bench_command.hpp"
#include "app/deck_options.hpp"
#include "app/exit_status.hpp"
#include "app/output_path.hpp"
#include "app/project_command.hpp"
#include "app/run_command.hpp"
#include "backends/backend.hpp"
#include "build_info.hpp"
#include "comm/comm_factory.hpp"
#include "comm/mpi_comm.hpp"
#include "comm/watchdog.hpp"
#include "config/deck.hpp"
#include "config/device_catalog.hpp"
#include "core/error.hpp"
#include "core/fault_seam.hpp"
#include "core/file_kind.hpp"
#include "device/blas_kernels.hpp"
#include "device/device.hpp"
#include "driver/verification.hpp"
#include "io/compare.hpp"
#include "io/output_file.hpp"
#include "io/report.hpp"
#include "io/results_reader.hpp"
#include "io/table.hpp"
#include "io/trace.hpp"
#include "model/memory_estimate.hpp"
#include "submission/submission_report.hpp"

namespace minictx {
namespace {

void print_verification(const Verification& v) {
  const bool single = std::any_of(v.rows.begin(), v.rows.end(),
                                  [](const VerifyRow& r) { return !std::isnan(r.single_max_rel_err); });
  Table t;
  t.header = {"tensor", "max abs err", "max rel err", "rms rel err", "rmse", "tolerance", "ok"};
  if (single) t.header.insert(t.header.end(), {"max rel vs single-device", "rms rel vs single-device"});
  for (const auto& r : v.rows) {
    t.rows.push_back({r.tensor, format_number(r.max_abs_err, 3), format_number(r.max_rel_err, 3),
                      format_number(r.rms_rel_err, 3), format_number(r.rmse, 3),
                      format_number(r.tolerance, 3), r.pass ? "yes" : "NO"});
    if (single)
      t.rows.back().insert(t.rows.back().end(),
                           {format_number(r.single_max_rel_err, 3), format_number(r.single_rms_rel_err, 3)});
  }
  std::printf("%s", render(t, TableFormat::markdown).c_str());
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

// Agreed steps, as in `run`: a rank-local failure never precedes a collective in one step.
int cmd_verify(const VerifyOptions& o) {
  std::vector<SweepPoint> points;
  std::unique_ptr<Comm> world;
  std::unique_ptr<Device> device;
  if (!agree([&] {
        points = verify_points(o);
        watchdog::configure(points.front().config.run.watchdog_seconds);
        if (!o.dump.empty() && points.size() > 1) input_error("--dump takes a deck with a single point");
        Reference r;
        if (!o.reference.empty() && !parse_enum(o.reference, r))
          input_error("--reference must be fp64 or single-device, not '" + o.reference + "'");
        // Rank 0 writes the dump: its name is checked before the verification runs.
        if (!o.dump.empty() && world_rank() == 0) prepare_output_path(o.dump, false, "--dump");
      }))
    return 2;
  if (!agree([&] {
        const RunConfig& first = points.front().config;
        device = make_device(first.run.device, MpiComm::world(first.topology.ranks_per_node)->topology());
      }))
    return 2;
  if (!agree([&] {
        for (const auto& p : points) {
          if (p.config.run.device != points.front().config.run.device)
            input_error(std::string("verify runs one run.device per launch, but the points name ") +
                        to_string(points.front().config.run.device) + " and " +
                        to_string(p.config.run.device));
          const auto mpi = MpiComm::world(p.config.topology.ranks_per_node);
          validate_backend(p.config, mpi->topology());
          device->set_attention_kernels(p.config.attention.kernels);  // this rank's GPU runs the family
          check_memory_estimate(p.config, *mpi, *device);
        }
        world = point_world(points.front().config, *device);
      }))
    return 2;
  Reference forced = Reference::fp64;
  const bool force_reference = !o.reference.empty() && parse_enum(o.reference, forced);
  auto reference_of = [&](const SweepPoint& p) { return force_reference ? forced : p.config.run.reference; };
  ReferenceCache references;
  for (const auto& p : points)
    if (reference_of(p) == Reference::fp64) references.expect(p.config);
  bool all_valid = true;
  const RunConfig* world_of = &points.front().config;
  for (const auto& p : points) {
    const Reference reference = reference_of(p);
    if (p.config.topology.ranks_per_node != world_of->topology.ranks_per_node ||
        p.config.run.comm != world_of->run.comm) {
      world = point_world(p.config, *device);
      world_of = &p.config;
    }
    device->set_precision(p.config.run.dtype);
    device->set_attention_kernels(p.config.attention.kernels);
    device->set_attention_partials(p.config.attention.partials);
    // A point refused on every rank alike: a single point's is the launch's error; inside
    // a sweep the point is INVALID with its reason.
    Verification v;
    std::string refused;
    try {
      v = verify_point(p.config, *world, *device, reference, o.dump, p.resolved_yaml, &references);
    } catch (const PointRefused& e) {
      if (points.size() == 1) return input_error_exit(e.what());
      refused = e.what();
    }
    all_valid = all_valid && v.valid;
    if (world_rank() == 0) {
      std::printf("verify %s backend=%s world=%d against %s%s%s\n",
                  p.config.run.mode == Mode::model ? "model" : "attention",
                  p.config.attention.backend.c_str(), world->size(), to_string(reference),
                  p.label.empty() ? "" : " at ", p.label.c_str());
      if (refused.empty())
        print_verification(v);
      else
        std::printf("refused: %s\n", refused.c_str());
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
  bool compare = false;
  bool submission = false;
  std::string csv;     // with --submission: also write the CSV worksheet here
  std::string json;    // with --submission: also write the assessment as JSON here
  std::string trace;   // the point whose timeline to write as a Chrome trace
  std::string output;  // with --trace: the trace file
};

// Intra- and inter-node bytes and times of two files compare only on the same split of
// ranks into nodes.
void require_same_nodes(const std::vector<std::string>& files, const ResultsFile& a, const ResultsFile& b) {
  const auto per_node = [](const ResultsFile& r) {
    const auto it = r.provenance.numbers.find("ranks_per_node");
    return it == r.provenance.numbers.end() ? 0LL : std::llround(it->second);
  };
  const long long pa = per_node(a), pb = per_node(b);
  if (pa > 0 && pb > 0 && pa != pb)
    input_error("report --compare: " + files[0] + " ran " + std::to_string(pa) + " ranks per node and " +
                files[1] + " " + std::to_string(pb) +
                "; their intra- and inter-node figures do not compare (project with --ranks-per-node " +
                std::to_string(pa) + ")");
}

// A new file of report's (--csv, --json), under the claim every writer takes.
void write_text(const std::string& path, const std::string& option, const std::string& text) {
  write_output_file(path, option, false, text,
                    option + " " + path + ": the file exists; remove it or choose another name");
}

// `report --submission`: the document on stdout, the worksheet to --csv and the JSON to
// --json when asked; the exit code is the submission's status (docs/benchmark.md).
int cmd_submission(const ReportOptions& o) {
  if (!o.csv.empty()) prepare_output_path(o.csv, false, "--csv");
  if (!o.json.empty()) prepare_output_path(o.json, false, "--json");
  std::vector<SubmissionFile> files;
  for (const auto& f : o.files) {
    require_regular_file(f, "results file");
    files.push_back({f, read_results(f)});
    for (const auto& line : files.back().results.unreadable)
      std::fprintf(stderr, "minictx: warning: %s: %s\n", f.c_str(), line.c_str());
  }
  const Submission assessed = assess_submission(files);
  std::printf("%s", submission_report(assessed, files, parse_table_format(o.format)).c_str());
  if (!o.csv.empty()) write_text(o.csv, "--csv", submission_report(assessed, files, TableFormat::csv));
  if (!o.json.empty()) write_text(o.json, "--json", submission_json(assessed));
  return exit_code(assessed.status);
}

// `report FILE --trace POINT -o TRACE.json`: the point's timeline for Perfetto.
int cmd_trace(const ReportOptions& o) {
  if (o.files.size() != 1) input_error("report --trace takes one results file");
  prepare_output_path(o.output, false, "-o");
  require_regular_file(o.files[0], "results file");
  const ResultsFile r = read_results(o.files[0]);
  for (const PointResult& p : r.points)
    if (p.name == o.trace) {
      write_text(o.output, "-o", chrome_trace(p));
      return 0;
    }
  input_error("report --trace: " + o.files[0] + " has no point " + o.trace);
}

int cmd_report(const ReportOptions& o) {
  if (world_rank() != 0) return 0;
  if (o.submission) return cmd_submission(o);
  if (!o.trace.empty()) return cmd_trace(o);
  if (o.compare) {
    if (o.files.size() != 2) input_error("report --compare takes two files: MEASURED.h5 PROJECTED.h5");
    for (const auto& f : o.files) require_regular_file(f, "results file");  // a FIFO would block the read
    const ResultsFile measured = read_results(o.files[0]), projected = read_results(o.files[1]);
    require_same_nodes(o.files, measured, projected);
    const TableFormat format = parse_table_format(o.format);
    std::printf("%s\n%s", render(compare_table(measured.points, projected.points), format).c_str(),
                render(compare_phases_table(measured.points, projected.points), format).c_str());
    return 0;
  }
  std::vector<PointResult> points;
  for (const auto& f : o.files) {
    require_regular_file(f, "results file");  // a FIFO would block the read for ever
    ResultsFile r = read_results(f);
    for (const auto& line : r.unreadable)
      std::fprintf(stderr, "minictx: warning: %s: %s\n", f.c_str(), line.c_str());
    points.insert(points.end(), r.points.begin(), r.points.end());
  }
  std::printf("%s", render(make_table(o.columns, points), parse_table_format(o.format)).c_str());
  return 0;
}

int cmd_list() {
  if (world_rank() != 0) return 0;
  std::printf("backends:\n");
  for (const auto& b : backend_registry()) {
    std::printf("  %-12s %s\n", b.name.c_str(), b.summary.c_str());
    for (const auto& k : b.keys)
      std::printf("  %-12s   %s: %s; %s\n", "", k.key.c_str(), key_type_text(k).c_str(), k.doc.c_str());
  }
  std::printf("devices:\n");
  for (const auto& d : device_registry()) std::printf("  %-12s %s\n", to_string(d.kind), d.attention.c_str());
  std::printf("comms:\n");
  for (const auto& c : comm_registry()) std::printf("  %s\n", to_string(c.kind));
  std::printf("model presets:\n");
  for (const auto& p : model_presets()) std::printf("  %s\n", p.c_str());
  // Every backend and ring layout runs them; the devices whose kernels have them (the
  // deck refuses the others in one line).
  struct Variant {
    const char *name, *doc;
    bool (*able)(const DeviceDeckFacts&);
  };
  const Variant variants[] = {
      {"window", "attention.window: sliding windows in tokens, per layer as {layers: [128, global]}",
       [](const DeviceDeckFacts& f) { return f.windows; }},
      {"sinks", "attention.sinks: a learned sink logit per query head, merged once per row",
       [](const DeviceDeckFacts& f) { return f.sinks; }},
      {"head_dim_v", "model.head_dim_v: MLA value heads narrower or wider than head_dim",
       [](const DeviceDeckFacts& f) { return f.value_head_dim; }}};
  std::printf("attention variants (every backend and ring layout):\n");
  for (const Variant& v : variants)
    std::printf("  %-12s %s; devices: %s\n", v.name, v.doc, devices_with(v.able).c_str());
  std::printf("report column sets:\n");
  for (const auto& t : column_sets()) std::printf("  %-12s %s\n", t.name, t.summary);
  std::printf("blas:\n  %s\n", blas_description().c_str());
  return 0;
}

// The `report` subcommand's options into `report`.
CLI::App* add_report_command(CLI::App& app, ReportOptions& report) {
  auto* report_cmd = app.add_subcommand("report", "print the table of one or more results files");
  report_cmd->add_option("files", report.files, "results files")->required();
  report_cmd->add_option("--format", report.format, "md | csv");
  std::string sets;
  for (const auto& t : column_sets()) sets += (sets.empty() ? "" : " | ") + std::string(t.name);
  report_cmd->add_option("--columns", report.columns, "column set: " + sets);
  report_cmd->add_flag("--compare", report.compare,
                       "MEASURED.h5 PROJECTED.h5: measured/projected ratios per point");
  auto* submission_flag = report_cmd->add_flag("--submission", report.submission,
                                               "one benchmark submission document: system, each class's FOM, "
                                               "verification and deviations from the class deck; exit 0 "
                                               "compliant, 4 unverified, 5 non-compliant, 6 inconsistent "
                                               "(docs/benchmark.md)");
  report_cmd->add_option("--csv", report.csv, "with --submission: also write the CSV worksheet to this file")
      ->needs(submission_flag);
  report_cmd
      ->add_option("--json", report.json, "with --submission: also write the assessment as JSON to this file")
      ->needs(submission_flag);
  submission_flag->excludes(report_cmd->get_option("--compare"));
  auto* trace_option = report_cmd->add_option(
      "--trace", report.trace,
      "POINT: write the point's timeline (run.ring_timeline) as a Chrome trace / Perfetto "
      "JSON file to -o");
  auto* output_option = report_cmd->add_option("-o,--output", report.output, "with --trace: the trace file")
                            ->needs(trace_option);
  trace_option->needs(output_option)
      ->excludes(submission_flag)
      ->excludes(report_cmd->get_option("--compare"));
  return report_cmd;
}

int dispatch(int argc, char** argv) {
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);

  CLI::App app{"minictx: a mini-app for sequence-parallel long-context transformer training"};
  app.set_version_flag("--version", std::string("minictx ") + build::version + " (" + build::git_sha +
                                        (build::git_dirty ? ", dirty" : "") + ")");
  app.require_subcommand(1);
  RunCommand run(app);
  VerifyOptions verify;
  auto* verify_cmd =
      app.add_subcommand("verify", "check a backend's outputs and gradients against a reference");
  add_deck_options(verify_cmd, verify.deck);
  verify_cmd->add_option("--reference", verify.reference, "fp64 (independent golden code) or single-device");
  verify_cmd->add_option("--dump", verify.dump,
                         "write global inputs, weights, outputs and gradients to this HDF5 file");
  verify_cmd->add_option("--point", verify.points,
                         "verify one more point: space-separated overrides on top of the deck and --set, "
                         "e.g. --point \"attention.ring_type=zigzag sequence.length=998\" (repeatable)");
  ReportOptions report;
  CLI::App* report_cmd = add_report_command(app, report);
  auto* list_cmd = app.add_subcommand("list", "list the backends, devices and comms compiled in");
  BenchCommand bench(app);
  ProjectCommand project(app);

  // CLI11 would only say that a subcommand is required.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* c : app.get_subcommands([](const CLI::App*) { return true; })) {
      names += (names.empty() ? "" : ", ") + c->get_name();
      known = known || c->get_name() == argv[1];
    }
    if (!known)
      return input_error_exit("unknown command '" + std::string(argv[1]) + "' (commands: " + names + ")");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank parsed the same arguments, so every rank exits alike: --help and
    // --version print on rank 0 and exit 0; any other parse error is bad input.
    if (e.get_exit_code() == 0) return world_rank() == 0 ? app.exit(e) : 0;
    return input_error_exit(e.what() + std::string("; see minictx --help"));
  }
  if (run.selected()) return run.run(command_line);
  if (*verify_cmd) return cmd_verify(verify);
  if (*report_cmd) {
    int code = 0;
    return agree([&] { code = cmd_report(report); }) ? code : 2;
  }
  if (*list_cmd) return cmd_list();
  if (bench.selected()) return bench.run(command_line);
  if (project.selected()) return project.run(command_line);
  return 2;
}

}  // namespace

int cli_main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  install_deck_backends();
  install_deck_devices();
  watchdog::on_abort(record_exit_status);
  int code = 0;
  try {
    fault_seam::arm(world_rank());
  } catch (const InputError& e) {  // the same environment on every rank: refused alike
    code = input_error_exit(e.what());
  }
  if (code == 0) {
    try {
      code = dispatch(argc, argv);
    } catch (const std::exception& e) {
      // A failure past the agreed checks may be on this rank alone: abort them all.
      watchdog::abort_job("minictx: error on rank " + std::to_string(world_rank()) + ": " + e.what());
    }
  }
  if (world_rank() == 0) record_exit_status(code);
  MPI_Finalize();
  return code;
}

}  // namespace minictx
