#include "app/verify_command.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "app/agree.hpp"
#include "app/exit_status.hpp"
#include "app/output_path.hpp"
#include "backends/registry.hpp"
#include "comm/comm_factory.hpp"
#include "comm/mpi_comm.hpp"
#include "comm/watchdog.hpp"
#include "config/deck.hpp"
#include "core/error.hpp"
#include "device/device.hpp"
#include "driver/verification.hpp"
#include "model/memory_estimate.hpp"
#include "report/table.hpp"

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

// The points to verify: the deck's own, or with --point, each group of overrides on top
// of the deck and --set (a group may itself sweep), labelled by its overrides.
std::vector<SweepPoint> verify_points(const VerifyCommand::Options& o) {
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

}  // namespace

VerifyCommand::VerifyCommand(CLI::App& app) {
  cmd_ = app.add_subcommand("verify", "check a backend's outputs and gradients against a reference");
  add_deck_options(cmd_, o_.deck);
  cmd_->add_option("--reference", o_.reference, "fp64 (independent golden code) or single-device");
  cmd_->add_option("--dump", o_.dump,
                   "write global inputs, weights, outputs and gradients to this HDF5 file");
  cmd_->add_option("--point", o_.points,
                   "verify one more point: space-separated overrides on top of the deck and --set, "
                   "e.g. --point \"attention.ring_type=zigzag sequence.length=998\" (repeatable)");
}

// Agreed steps, as in `run`: a rank-local failure never precedes a collective in one step.
int VerifyCommand::run() {
  const Options& o = o_;
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
          device->configure(DeviceSettings::of(p.config));  // this rank's GPU runs the kernel family
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
    device->configure(DeviceSettings::of(p.config));
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

}  // namespace minictx
