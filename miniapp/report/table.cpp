#include "report/table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"

namespace minictx {
namespace {

std::string markdown_cell(const std::string& cell) {
  std::string out;
  for (char c : cell) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string csv_cell(const std::string& cell) {
  if (cell.find_first_of(",\"\r\n") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string markdown_line(const std::vector<std::string>& cells) {
  std::string line = "|";
  for (const std::string& cell : cells) line += " " + markdown_cell(cell) + " |";
  return line + "\n";
}

std::string csv_line(const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) line += (i ? "," : "") + csv_cell(cells[i]);
  return line + "\n";
}

}  // namespace

std::string render(const Table& table, TableFormat format) {
  for (const auto& row : table.rows)
    require(row.size() == table.header.size(), "table row has " + std::to_string(row.size()) + " cells for " +
                                                   std::to_string(table.header.size()) + " columns");
  std::string out;
  if (format == TableFormat::csv) {
    out += csv_line(table.header);
    for (const auto& row : table.rows) out += csv_line(row);
    return out;
  }
  out += markdown_line(table.header);
  out += markdown_line(std::vector<std::string>(table.header.size(), ":----:"));
  for (const auto& row : table.rows) out += markdown_line(row);
  return out;
}

TableFormat parse_table_format(const std::string& name) {
  if (name == "markdown" || name == "md") return TableFormat::markdown;
  if (name == "csv") return TableFormat::csv;
  input_error("unknown table format '" + name + "' (choose markdown or csv)");
}

std::string format_number(double value, int decimals) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  const double magnitude = std::fabs(value);
  if (magnitude > 0 && magnitude < 1e-6) {
    std::snprintf(buf, sizeof buf, "%.2e", value);
    return buf;
  }
  if (magnitude > 0) {
    // Decimals that put the third significant digit on screen.
    const int needed = 2 - static_cast<int>(std::floor(std::log10(magnitude)));
    decimals = std::max(decimals, needed);
  }
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

}  // namespace minictx
