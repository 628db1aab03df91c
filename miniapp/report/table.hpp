#pragma once
#include <string>
#include <vector>

namespace minictx {

enum class TableFormat { markdown, csv };

// A table: header + rows of strings (every row as wide as the header).
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// Markdown as in the seed tables: `| a | b |`, then `| :----: | :----: |`, one line per
// row ('|' in a cell escaped as "\|", line breaks become spaces). CSV: RFC 4180 quoting
// (a cell with a comma, quote or line break is quoted, quotes doubled), '\n' line ends.
// Error if a row's width differs from the header's.
std::string render(const Table& table, TableFormat format);

// "markdown" (or "md") / "csv"; InputError naming the choices otherwise.
TableFormat parse_table_format(const std::string& name);

// `value` with `decimals` decimals, widened so that at least 3 significant digits show
// (0.0123 with 1 decimal prints "0.0123", not "0.0"); tiny magnitudes (< 1e-6) print in
// scientific notation; NaN and infinities print as "nan", "inf", "-inf".
std::string format_number(double value, int decimals);

}  // namespace minictx
