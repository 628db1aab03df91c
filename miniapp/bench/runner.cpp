#include "bench/runner.hpp"

#include <chrono>
#include <memory>
#include <vector>

#include "backends/backend.hpp"
#include "backends/engine/layout_work.hpp"
#include "backends/registry.hpp"
#include "bench/metrics.hpp"
#include "bench/ring_timeline_gather.hpp"
#include "comm/watchdog.hpp"
#include "core/phase_timer.hpp"
#include "model/attention_step.hpp"
#include "model/layer_stack.hpp"

namespace minictx {

PointResult run_point(const RunConfig& cfg, Comm& world, Device& device,
                      const std::function<void()>& between) {
  validate_backend(cfg, world.group_topology());
  device.release_cached_memory();
  device.memory().reset_peak();
  PhaseTimer timer(device.step_clock());
  auto backend = find_backend(cfg.attention.backend).create(world, device, cfg);
  RingTimeline timeline(device.step_clock());
  if (cfg.run.ring_timeline) backend->set_ring_timeline(&timeline);
  std::unique_ptr<LayerStack> model;
  std::unique_ptr<AttentionStep> attention;
  const bool with_backward = !cfg.run.fwd_only;
  double loss = 0;
  watchdog::configure(cfg.run.watchdog_seconds);
  auto step = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    if (model)
      loss = model->step(with_backward);
    else
      attention->step(with_backward);
    watchdog::step_completed(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  };
  if (cfg.run.mode == Mode::model)
    model = std::make_unique<LayerStack>(cfg, device, world, *backend, timer, &timeline);
  else
    attention = std::make_unique<AttentionStep>(cfg, device, *backend, timer, &timeline);

  auto check = [&] {
    if (between) between();
  };
  for (int i = 0; i < cfg.run.warmup; ++i) {
    check();
    step();
  }
  timer.clear();
  world.bytes().reset();
  std::vector<double> mine(size_t(cfg.run.iters));
  const int recorded = cfg.run.ring_timeline ? cfg.run.iters - 1 : -1;  // the last timed iteration
  std::vector<PhaseRecord> phases;  // every timed iteration's, when the timeline records
  for (int i = 0; i < cfg.run.iters; ++i) {
    check();
    world.barrier();
    timer.settle();  // the phases' times count from the barrier, as the ring steps' do
    if (i == recorded) timeline.start();
    const auto t0 = std::chrono::steady_clock::now();
    step();
    device.synchronize();  // an asynchronous device's step ends when its queue drains
    mine[size_t(i)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    timer.settle();
    if (cfg.run.ring_timeline)
      for (const PhaseTimer::Span& s : timer.settled()) phases.push_back({0, i, s.phase, s.start, s.end});
    if (i == recorded) timeline.stop();
  }
  const ByteCounter sent = world.bytes();

  RankMeasurements m;
  m.iter_seconds = mine;
  m.phase_seconds = timer.seconds();
  m.peak_memory_bytes = double(device.memory().peak());
  m.bytes_sent_intra = sent.intra;
  m.bytes_sent_inter = sent.inter;
  m.loss = loss;
  if (model) {
    m.loss_scale = model->grad_scale();
    m.overflow_steps = double(model->loss_scaler().overflows());
  }
  m.real_tokens = double(backend->layout().real_tokens(backend->part())) * cfg.sequence.batch;
  m.attention_pairs = part_pairs(backend->layout(), backend->part(), visible_keys(cfg));
  PointResult result = gather_point(cfg, world, m);
  if (cfg.run.ring_timeline) result.ring_timeline = gather_ring_timeline(world, timeline, recorded, phases);
  return result;
}

}  // namespace minictx
