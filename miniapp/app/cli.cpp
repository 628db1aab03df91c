#include "app/cli.hpp"

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>

#include "app/agree.hpp"
#include "app/bench_command.hpp"
#include "app/deck_options.hpp"
#include "app/exit_status.hpp"
#include "app/output_path.hpp"
#include "app/project_command.hpp"
#include "app/run_command.hpp"
#include "app/verify_command.hpp"
#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "build_info.hpp"
#include "comm/comm_factory.hpp"
#include "comm/watchdog.hpp"
#include "config/device_catalog.hpp"
#include "core/error.hpp"
#include "core/fault_seam.hpp"
#include "core/file_kind.hpp"
#include "device/blas_kernels.hpp"
#include "device/device.hpp"
#include "io/output_file.hpp"
#include "io/results_reader.hpp"
#include "report/compare.hpp"
#include "report/report.hpp"
#include "report/table.hpp"
#include "report/trace.hpp"
#include "submission/submission_report.hpp"

namespace minictx {
namespace {

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
  VerifyCommand verify(app);
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
  if (verify.selected()) return verify.run();
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
