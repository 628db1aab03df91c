#include "io/results_reader.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "core/error.hpp"
#include "io/hdf5_util.hpp"
#include "io/results_schema.hpp"

namespace minictx {
namespace {

void read_provenance(hid_t file, Provenance& prov) {
  h5::Handle group = h5::open_group(file, "provenance");
  for (const std::string& name : h5::attribute_names(group.get())) {
    // Strings are text, numbers are numbers: the attribute's type says which map.
    const H5T_class_t cls = h5::attribute_class(group.get(), name);
    if (cls == H5T_STRING)
      prov.text[name] = h5::read_string_attribute(group.get(), name);
    else if (cls == H5T_FLOAT || cls == H5T_INTEGER)
      prov.numbers[name] = h5::read_double_attribute(group.get(), name);
    else
      fail("provenance attribute '" + name + "' is neither a string nor a number");
  }
  prov.hostnames = h5::read_strings(group.get(), "hostnames");
}

std::vector<VerifyRow> read_verification(hid_t point) {
  h5::Handle group = h5::open_group(point, "verification");
  const hid_t g = group.get();
  const std::vector<std::string> tensor = h5::read_strings(g, "tensor");
  const std::vector<double> max_abs_err = h5::read_doubles(g, "max_abs_err");
  const std::vector<double> max_rel_err = h5::read_doubles(g, "max_rel_err");
  const std::vector<double> rmse = h5::read_doubles(g, "rmse");
  const std::vector<double> tolerance = h5::read_doubles(g, "tolerance");
  const std::vector<int8_t> pass = h5::read_int8s(g, "pass");
  const size_t n = tensor.size();
  if (max_abs_err.size() != n || max_rel_err.size() != n || rmse.size() != n ||
      tolerance.size() != n || pass.size() != n)
    fail("the verification columns differ in length");
  std::vector<VerifyRow> rows(n);
  for (size_t i = 0; i < n; ++i)
    rows[i] = VerifyRow{tensor[i], max_abs_err[i], max_rel_err[i], rmse[i], tolerance[i],
                        pass[i] != 0};
  return rows;
}

// Returns the point and its insertion index.
std::pair<int64_t, PointResult> read_point(hid_t points, const std::string& name) {
  h5::Handle group = h5::open_group(points, name);
  const hid_t g = group.get();
  PointResult p;
  p.name = name;
  const int64_t index = h5::read_int_attribute(g, "index");
  p.deck = h5::read_string_attribute(g, "deck");
  p.verdict = h5::read_string_attribute(g, "verdict");
  p.reference = h5::read_string_attribute(g, "reference");
  p.skipped_reason = h5::read_string_attribute(g, "skipped_reason");
  p.iters = static_cast<int>(h5::read_int_attribute(g, "iters"));
  p.ranks = static_cast<int>(h5::read_int_attribute(g, "ranks"));
  {
    h5::Handle labels = h5::open_group(g, "labels");
    for (const std::string& key : h5::attribute_names(labels.get()))
      p.labels[key] = h5::read_string_attribute(labels.get(), key);
  }
  {
    h5::Handle metrics = h5::open_group(g, "metrics");
    for (const std::string& key : h5::attribute_names(metrics.get()))
      p.metrics[key] = h5::read_double_attribute(metrics.get(), key);
  }
  std::vector<hsize_t> dims;
  p.iter_seconds = h5::read_doubles(g, "iter_seconds", &dims);
  if (dims.size() != 2) fail("iter_seconds is not 2-D");
  {
    h5::Handle phases = h5::open_group(g, "phase_seconds");
    for (const std::string& phase : h5::link_names(phases.get()))
      p.phase_seconds[phase] = h5::read_doubles(phases.get(), phase);
  }
  p.peak_memory_bytes = h5::read_doubles(g, "peak_memory_bytes");
  p.bytes_sent_intra = h5::read_doubles(g, "bytes_sent_intra");
  p.bytes_sent_inter = h5::read_doubles(g, "bytes_sent_inter");
  p.verification = read_verification(g);
  return {index, std::move(p)};
}

ResultsFile read_contents(const std::string& path) {
  h5::Handle file = h5::open_file_readonly(path);
  const hid_t f = file.get();
  if (!h5::has_attribute(f, "format") ||
      h5::attribute_class(f, "format") != H5T_STRING ||
      h5::read_string_attribute(f, "format") != schema::kFormat)
    fail(std::string("not a minictx results file (no root attribute format = \"") +
         schema::kFormat + "\")");
  const int64_t version = h5::read_int_attribute(f, "format_version");
  if (version != schema::kFormatVersion)
    fail("format_version " + std::to_string(version) + ", but this minictx reads version " +
         std::to_string(schema::kFormatVersion));

  ResultsFile contents;
  read_provenance(f, contents.provenance);
  h5::Handle points = h5::open_group(f, "points");
  std::vector<std::pair<int64_t, PointResult>> indexed;
  for (const std::string& name : h5::link_names(points.get())) {
    try {
      indexed.push_back(read_point(points.get(), name));
    } catch (const Error& e) {
      throw Error("point '" + name + "': " + e.what());
    }
  }
  std::stable_sort(indexed.begin(), indexed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& entry : indexed) contents.points.push_back(std::move(entry.second));
  return contents;
}

}  // namespace

ResultsFile read_results(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) fail("results file '" + path + "' not found");
  try {
    h5::QuietErrors quiet;
    return read_contents(path);
  } catch (const Error& e) {
    throw Error("results file '" + path + "': " + e.what());
  }
}

}  // namespace minictx
