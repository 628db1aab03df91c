// Sweep expansion: the deck's lists become points (a cartesian product in deck order,
// zipped keys moving together), each resolved to a RunConfig and validated.
#include <cmath>
#include <set>
#include <sstream>

#include "config/backend_catalog.hpp"
#include "config/benchmark.hpp"
#include "config/deck_schema.hpp"
#include "config/device_catalog.hpp"
#include "core/error.hpp"
#include "core/saturating.hpp"

namespace minictx::deck_detail {
namespace {

// Far more points than any benchmark campaign runs; a typo like a 1000-long list in
// each of three keys would otherwise build a billion configurations.
constexpr std::size_t max_points = 10000;

// Generated document lengths are listed, 8 bytes each (512 MiB at this bound).
constexpr int64_t kMostGeneratedDocuments = int64_t(1) << 26;

// x = 2^e exactly: frexp's mantissa of a power of two is 0.5.
bool is_power_of_two(double x) {
  int e = 0;
  return std::frexp(x, &e) == 0.5;
}

// A number as an error line shows it (6 significant digits).
std::string number_text(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

const DeckEntry* find_entry(const std::vector<DeckEntry>& entries, const std::string& key) {
  for (const auto& e : entries)
    if (e.key == key) return &e;
  return nullptr;
}

// Keys one run applies once, before its first point (the comm, the device, the results
// file), so a list of them would label points with values they did not run with.
bool whole_run_key(const std::string& key) {
  return key.rfind("topology.", 0) == 0 || key.rfind("output.", 0) == 0 || key == "run.device" ||
         key == "run.comm";
}

// Sections in schema order, every key with its value; sweep.zip has no meaning for a point.
std::string resolved_yaml(const RunConfig& cfg) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const auto& section : section_names()) {
    if (section == "sweep") continue;
    out << YAML::Key << section << YAML::Value << YAML::BeginMap;
    for (const auto& s : schema())
      if (s.section == section) out << YAML::Key << s.leaf << YAML::Value << format_value(s.read(cfg));
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

// run.input_scale (a power of two) against the data it scales, which must keep its
// precision: the smallest input (the scale / 128) stored exactly in the run's dtype (fp16's
// subnormals end at 2^-24), the attention gradients, which grow as the cube of the scale,
// normal in fp32, where every dtype computes (its normal numbers end at 2^-126); and the
// largest input (the scale) finite in the dtype.
void check_input_scale_range(const RunConfig& c,
                             const std::function<std::string(std::initializer_list<const char*>)>& at) {
  const bool f16 = c.run.dtype == DType::f16;
  const int lowest = f16 ? -17 : -42, highest = f16 ? 15 : 127;
  const int e = std::ilogb(c.run.input_scale);
  if (e < lowest || e > highest)
    input_error(at({"run.input_scale", "run.dtype"}) + ": run.input_scale must lie between 2^" +
                std::to_string(lowest) + " and 2^" + std::to_string(highest) + " in " +
                to_string(c.run.dtype) +
                " (below, the inputs or the attention gradients, which grow as its cube, underflow; above, "
                "the inputs overflow), got " +
                number_text(c.run.input_scale));
}

// sequence.documents against sequence.length and sequence.batch.
void check_documents(const RunConfig& c,
                     const std::function<std::string(std::initializer_list<const char*>)>& at) {
  const DocumentPacking& d = c.sequence.documents;
  if (d.none()) return;
  const std::string where = at({"sequence.documents", "sequence.length", "sequence.batch"});
  if (d.per_row && int64_t(d.lengths.size()) != c.sequence.batch)
    input_error(where + ": sequence.documents gives " + std::to_string(d.lengths.size()) +
                " rows of lengths, but sequence.batch is " + std::to_string(c.sequence.batch) +
                " (rows: takes one length list per batch row)");
  for (std::size_t r = 0; r < d.lengths.size(); ++r) {
    std::optional<int64_t> sum = 0;
    for (int64_t len : d.lengths[r]) sum = sum ? checked_add(*sum, len) : sum;
    if (sum != c.sequence.length)
      input_error(where + ": sequence.documents" + (d.per_row ? " row " + std::to_string(r) : "") +
                  " lengths sum to " +
                  (sum ? std::to_string(*sum) : "more than " + std::to_string(kSaturated)) +
                  " tokens, but sequence.length is " + std::to_string(c.sequence.length));
  }
  // Generated lengths: a row holds up to length / min documents, every one of which the
  // run and the projection list.
  if (!d.generated()) return;
  const int64_t per_row = c.sequence.length / d.min_length + (c.sequence.length % d.min_length != 0);
  const std::optional<int64_t> most = checked_mul(c.sequence.batch, per_row);
  if (!most || *most > kMostGeneratedDocuments)
    input_error(where + ": sequence.documents " + to_text(d) + " may draw up to " +
                (most ? std::to_string(*most) : "more than " + std::to_string(kSaturated)) +
                " documents (sequence.batch times sequence.length / min); at most " +
                std::to_string(kMostGeneratedDocuments) + " are supported: raise the minimum length");
}

// attention.window against the layers, and the attention variants against the device's
// kernels: a variant the kernels lack would be silently ignored.
void check_attention_variants(const RunConfig& c, const DeviceDeckFacts& device,
                              const std::function<std::string(std::initializer_list<const char*>)>& at) {
  const AttentionWindow& w = c.attention.window;
  if (c.run.mode == Mode::attention && w.pattern.size() > 1)
    input_error(at({"attention.window", "run.mode"}) + ": attention.window " + to_text(w) +
                " gives windows per layer; attention mode runs one attention (give one window)");
  if (w.pattern.size() > size_t(c.model.layers))
    input_error(at({"attention.window", "model.layers", "model.preset"}) + ": attention.window " +
                to_text(w) + " lists " + std::to_string(w.pattern.size()) +
                " layers' windows, but model.layers is " + std::to_string(c.model.layers));
  auto refuse = [&](const char* key, const std::string& value, bool (*able)(const DeviceDeckFacts&)) {
    input_error(at({key, "model.preset", "run.device"}) + ": run.device " + to_string(c.run.device) +
                " has no attention kernels for " + key + " " + value + " (run.device " + devices_with(able) +
                " has)");
  };
  if (!w.none() && !device.windows)
    refuse("attention.window", to_text(w), [](const DeviceDeckFacts& f) { return f.windows; });
  if (c.attention.sinks && !device.sinks)
    refuse("attention.sinks", "true", [](const DeviceDeckFacts& f) { return f.sinks; });
  if (c.model.value_dim() != c.model.head_dim && !device.value_head_dim)
    refuse("model.head_dim_v", std::to_string(c.model.head_dim_v),
           [](const DeviceDeckFacts& f) { return f.value_head_dim; });
}

// The LM head (model.vocab): a device with its kernel; run.loss_chunk only where a head runs.
void check_lm_head(const RunConfig& c, const DeviceDeckFacts& device,
                   const std::function<std::string(std::initializer_list<const char*>)>& at) {
  const bool head = c.model.vocab > 0 && c.run.mode == Mode::model;
  if (head && !device.lm_head)
    input_error(at({"model.vocab", "model.preset", "run.device"}) + ": model.vocab " +
                std::to_string(c.model.vocab) + " (the LM head and its loss) needs run.device " +
                devices_with([](const DeviceDeckFacts& f) { return f.lm_head; }) + "; run.device " +
                to_string(c.run.device) + " has no cross-entropy kernel (set model.vocab: 0)");
  if (!head && c.run.loss_chunk != RunSettings().loss_chunk)
    input_error(at({"run.loss_chunk"}) +
                ": run.loss_chunk sets the rows of the LM head's chunks; this point has none (model.vocab " +
                std::to_string(c.model.vocab) + ", run.mode " + to_string(c.run.mode) + ")");
}

// The layer stack's loss scale and gradient sums. A value the point would not use is an
// error, as a backend option its backend does not read; the default is let through.
void check_gradient_keys(const RunConfig& c,
                         const std::function<std::string(std::initializer_list<const char*>)>& at) {
  const RunSettings defaults;
  const RunSettings& r = c.run;
  const char* exact = " (so that scaling the loss and unscaling its gradients are exact), got ";
  if (r.loss_scale != RunSettings::kDynamicLossScale && !is_power_of_two(r.loss_scale))
    input_error(at({"run.loss_scale"}) + ": run.loss_scale must be dynamic or a power of two of at least 1" +
                exact + number_text(r.loss_scale));
  if (!is_power_of_two(r.initial_loss_scale))
    input_error(at({"run.initial_loss_scale"}) +
                ": run.initial_loss_scale must be a power of two of at least 1" + exact +
                number_text(r.initial_loss_scale));
  if (r.mode == Mode::attention) {
    if (r.loss_scale != defaults.loss_scale || r.initial_loss_scale != defaults.initial_loss_scale)
      input_error(
          at({"run.loss_scale", "run.initial_loss_scale", "run.mode"}) +
          ": run.loss_scale and run.initial_loss_scale scale the layer stack's loss (run.mode model); "
          "attention mode has no loss, its backward starts from a generated dO (scaled with the "
          "inputs by run.input_scale)");
    if (r.grad_reduce_dtype != defaults.grad_reduce_dtype)
      input_error(at({"run.grad_reduce_dtype", "run.mode"}) +
                  ": run.grad_reduce_dtype sets the precision of the layer stack's weight-gradient sums "
                  "(run.mode model); attention mode has no weights");
    return;
  }
  if (r.initial_loss_scale != defaults.initial_loss_scale && !c.dynamic_loss_scale())
    input_error(at({"run.initial_loss_scale", "run.loss_scale", "run.dtype"}) +
                ": run.initial_loss_scale is where fp16's dynamic loss scale starts; this point's scale is " +
                (r.loss_scale != RunSettings::kDynamicLossScale
                     ? "fixed (run.loss_scale " + number_text(r.loss_scale) + ")"
                     : std::string("1 in ") + to_string(r.dtype)));
}

// The kernel choices only a GPU has (attention.kernels, run.layer_kernels): a device with
// one set would silently ignore them.
void check_kernel_choices(const RunConfig& c, const DeviceDeckFacts& device,
                          const std::function<std::string(std::initializer_list<const char*>)>& at) {
  if (!device.kernel_families && c.attention.kernels != AttentionKernels::automatic)
    input_error(at({"attention.kernels", "run.device"}) + ": attention.kernels " +
                to_string(c.attention.kernels) + " picks the " +
                devices_with([](const DeviceDeckFacts& f) { return f.kernel_families; }) +
                " device's flash kernels; run.device " + to_string(c.run.device) +
                " has one attention kernel (leave attention.kernels at auto)");
  if (!device.layer_kernel_sets && c.run.layer_kernels != LayerKernels::standard)
    input_error(at({"run.layer_kernels", "run.device"}) + ": run.layer_kernels " +
                to_string(c.run.layer_kernels) + " picks the " +
                devices_with([](const DeviceDeckFacts& f) { return f.layer_kernel_sets; }) +
                " device's layer kernels; run.device " + to_string(c.run.device) +
                " has one set (leave run.layer_kernels at standard)");
}

// Checks between keys that no single value can make (a preset may have supplied either
// side). `at` names the first of the keys the deck sets, for the error line.
void check_point(const RunConfig& c,
                 const std::function<std::string(std::initializer_list<const char*>)>& at) {
  const ModelShape& m = c.model;
  if (m.heads % m.kv_heads != 0)
    input_error(at({"model.kv_heads", "model.heads", "model.preset"}) + ": model.heads (" +
                std::to_string(m.heads) + ") must be a multiple of model.kv_heads (" +
                std::to_string(m.kv_heads) + ") for grouped-query attention");
  const AttentionConfig& a = c.attention;
  const BackendDeckFacts& backend = backend_facts(a.backend);
  // A backend that exchanges heads declares attention.ulysses_degree (the engine's key).
  const bool splits_heads = backend.splits_heads && backend.splits_heads(a);
  const long long ulysses = splits_heads ? a.options.integer("attention.ulysses_degree") : 1;
  if (m.heads % ulysses != 0)
    input_error(at({"attention.ulysses_degree", "model.heads", "model.preset"}) +
                ": attention.ulysses_degree (" + std::to_string(ulysses) + ") must divide model.heads (" +
                std::to_string(m.heads) + ") because Ulysses splits the heads across ranks");
  if (c.run.watchdog_seconds < 0 && c.run.watchdog_seconds != -1)
    input_error(at({"run.watchdog_seconds"}) +
                ": run.watchdog_seconds must be -1 (automatic), 0 (off) or seconds");
  const DeviceDeckFacts& device = device_facts(c.run.device);
  // Only a GPU's comm library is hosted by some devices and not others: NCCL.
  if (!hosts_comm(device, c.run.comm))
    input_error(at({"run.comm", "run.device"}) + ": run.comm " + to_string(c.run.comm) +
                " needs run.device " +
                devices_with([&](const DeviceDeckFacts& f) { return hosts_comm(f, c.run.comm); }) +
                " (NCCL moves device memory)");
  // A device that picks its kernels' tiles per head dim (device_config in the results)
  // would silently ignore host tile sizes.
  const AttentionConfig host_tiles;
  if (device.own_tiles && (a.block_q != host_tiles.block_q || a.block_k != host_tiles.block_k))
    input_error(at({"attention.block_q", "attention.block_k", "run.device"}) +
                ": attention.block_q/block_k are the host kernel's tiles; run.device " +
                to_string(c.run.device) +
                " chooses its own per head dim (the results' device_config names them)");
  check_gradient_keys(c, at);
  check_lm_head(c, device, at);
  if (!is_power_of_two(c.run.input_scale))
    input_error(at({"run.input_scale"}) +
                ": run.input_scale must be a power of two (so that the scaled inputs are exact in every "
                "dtype), got " +
                number_text(c.run.input_scale));
  check_input_scale_range(c, at);
  if (c.run.key_directions > 0 && c.run.mode != Mode::attention)
    input_error(at({"run.key_directions", "run.mode"}) +
                ": run.key_directions draws the keys of attention mode; model mode computes its keys from x");
  check_documents(c, at);
  check_attention_variants(c, device, at);
  check_kernel_choices(c, device, at);
}

// A backend option the deck sets for a backend that does not read it would be silently
// ignored, so it is an error. A value equal to the key's default is let through: it
// changes nothing, and it is what a sweep over backends zips for the points whose
// backend does not take the key (inputs/README.md, "Sweeps").
void check_backend_options(const std::vector<DeckEntry>& entries, const std::vector<std::size_t>& pick,
                           const RunConfig& c, const std::string& point) {
  const BackendDeckFacts& backend = backend_facts(c.attention.backend);
  const RunConfig defaults;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string& key = entries[i].key;
    if (key == "sweep.zip" || !is_backend_option(key) || takes_option(backend, key)) continue;
    const KeySpec& spec = *find_key(key);
    if (format_value(entries[i].values[pick[i]]) == format_value(spec.read(defaults))) continue;
    std::string readers;
    for (const auto& b : backend_catalog())
      if (takes_option(b, key)) readers += (readers.empty() ? "" : ", ") + b.name;
    input_error(entries[i].where + point + ": " + key + " does not apply to attention.backend " +
                backend.name + " (it applies to " + readers + ")");
  }
}

// A list of a key the run applies once (whole_run_key) cannot be swept.
void check_no_whole_run_list(const std::vector<DeckEntry>& entries) {
  for (const auto& e : entries)
    if (e.is_list && e.values.size() > 1 && whole_run_key(e.key))
      input_error(e.where + ": " + e.key +
                  " applies to the whole run and cannot be swept; run one job per value");
}

// The keys sweep.zip names, each a list in this deck, all of the same length.
std::set<std::string> zipped_keys(const std::vector<DeckEntry>& entries) {
  std::set<std::string> zipped;
  const DeckEntry* zip = find_entry(entries, "sweep.zip");
  if (!zip) return zipped;
  const DeckEntry* first = nullptr;
  for (const auto& v : zip->values) {
    const std::string& k = std::get<std::string>(v);
    const DeckEntry* e = find_entry(entries, k);
    if (!e || !e->is_list)
      input_error(zip->where + ": sweep.zip names '" + k + "', which is not a list in this deck");
    if (first && e->values.size() != first->values.size())
      input_error(zip->where + ": sweep.zip lists must have equal lengths, but " + first->key + " has " +
                  std::to_string(first->values.size()) + " values and " + k + " has " +
                  std::to_string(e->values.size()));
    if (!first) first = e;
    zipped.insert(k);
  }
  return zipped;
}

// The sweep's dimensions, each the indices of the entries that move together: one
// dimension per list in deck order; the zipped lists share the dimension placed where
// the first of them appears. The last dimension varies fastest.
using Dimensions = std::vector<std::vector<std::size_t>>;
Dimensions sweep_dimensions(const std::vector<DeckEntry>& entries, const std::set<std::string>& zipped) {
  Dimensions dims;
  std::size_t zip_dim = SIZE_MAX;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i].is_list || entries[i].key == "sweep.zip") continue;
    if (!zipped.count(entries[i].key)) {
      dims.push_back({i});
      continue;
    }
    if (zip_dim == SIZE_MAX) {
      zip_dim = dims.size();
      dims.emplace_back();
    }
    dims[zip_dim].push_back(i);
  }
  return dims;
}

// The number of points, refused past max_points.
std::size_t point_count(const std::vector<DeckEntry>& entries, const Dimensions& dims,
                        const std::string& deck_name) {
  std::size_t count = 1;
  for (const auto& d : dims) {
    count *= entries[d[0]].values.size();
    if (count > max_points)
      input_error("deck " + deck_name + ": the sweep has more than " + std::to_string(max_points) +
                  " points; split it into several decks");
  }
  return count;
}

// The point taking value pick[i] of entry i: labelled, resolved to a RunConfig and checked.
SweepPoint make_point(const std::vector<DeckEntry>& entries, const std::vector<std::size_t>& pick,
                      const std::string& deck_name, const std::filesystem::path& deck_dir,
                      std::map<std::string, MachineProfile>& profiles) {
  SweepPoint pt;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i].is_list || entries[i].key == "sweep.zip") continue;
    const std::string text = format_value(entries[i].values[pick[i]]);
    pt.label += (pt.label.empty() ? "" : " ") + entries[i].key + "=" + text;
    pt.varied[entries[i].key] = text;
  }

  // The preset first, so that the deck's own model keys override it.
  RunConfig& c = pt.config;
  const DeckEntry* preset = find_entry(entries, "model.preset");
  c.model =
      preset_shape(preset ? std::get<std::string>(preset->values[pick[preset - entries.data()]]) : "custom");
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (entries[i].key != "sweep.zip") find_key(entries[i].key)->apply(c, entries[i].values[pick[i]]);

  const std::string point = pt.label.empty() ? "" : " (point " + pt.label + ")";
  auto at = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys)
      if (const DeckEntry* e = find_entry(entries, k)) return e->where + point;
    return "deck " + deck_name + point;
  };
  apply_benchmark_role(c, at({"benchmark.role"}));
  check_backend_options(entries, pick, c, point);
  check_point(c, at);
  resolve_machine(c, deck_dir, at({"machine.profile", "machine.peak_tflops"}), profiles);
  pt.resolved_yaml = resolved_yaml(c);
  return pt;
}

}  // namespace

std::vector<SweepPoint> expand_entries(const std::vector<DeckEntry>& entries, const std::string& deck_name,
                                       const std::filesystem::path& deck_dir) {
  check_no_whole_run_list(entries);
  const Dimensions dims = sweep_dimensions(entries, zipped_keys(entries));
  const std::size_t count = point_count(entries, dims, deck_name);

  std::vector<SweepPoint> points;
  points.reserve(count);
  std::map<std::string, MachineProfile> profiles;
  std::vector<std::size_t> odometer(dims.size(), 0);
  for (std::size_t p = 0; p < count; ++p) {
    std::vector<std::size_t> pick(entries.size(), 0);
    for (std::size_t d = 0; d < dims.size(); ++d)
      for (std::size_t i : dims[d]) pick[i] = odometer[d];
    points.push_back(make_point(entries, pick, deck_name, deck_dir, profiles));

    for (std::size_t d = dims.size(); d-- > 0;) {
      if (++odometer[d] < entries[dims[d][0]].values.size()) break;
      odometer[d] = 0;
    }
  }
  return points;
}

}  // namespace minictx::deck_detail
