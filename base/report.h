// Report: a result table, printed for people and written as CSV and JSON
// for machines.  Every benchmark in bench/, the crash harness and
// `walfs-trace stats` use it, so every one accepts `--json PATH` with the
// same shape: one JSON object per table row, keyed by the column names (a
// program with several tables writes an object of them, keyed by table).
//
//   Report r({"threads", "mode", "tx_per_s"});
//   r.AddRow({Cell(4), Cell("wakeq"), Cell(123456.0, 0)});
//   r.Print(stdout);
//   r.WriteJson("out.json");
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/status.h"

namespace walfs {

// One value: text, an integer, or a number printed with `precision` decimals.
struct Cell {
  Cell(const char* s) : value(std::string(s)) {}                 // NOLINT
  Cell(std::string s) : value(std::move(s)) {}                   // NOLINT
  Cell(std::int64_t v) : value(v) {}                             // NOLINT
  Cell(int v) : value(std::int64_t{v}) {}                        // NOLINT
  Cell(std::uint64_t v) : value(static_cast<std::int64_t>(v)) {} // NOLINT
  Cell(double v, int prec = 2) : value(v), precision(prec) {}    // NOLINT

  std::variant<std::string, std::int64_t, double> value;
  int precision = 2;

  std::string Text() const;
};

class Report {
 public:
  explicit Report(std::vector<std::string> columns) : columns_(std::move(columns)) {}

  void AddRow(std::vector<Cell> row);
  void Print(std::FILE* out, const std::string& title = "") const;
  Status WriteCsv(const std::string& path) const;
  Status WriteJson(const std::string& path) const;

  const std::vector<std::string>& columns() const { return columns_; }
  const std::vector<std::vector<Cell>>& rows() const { return rows_; }

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<Cell>> rows_;
};

// Several tables in one JSON file: {"name": [rows...], ...}, in the order given.
Status WriteJsonTables(const std::string& path, const std::vector<std::pair<std::string, const Report*>>& tables);

// The nearest-rank q-quantile (q in [0, 1]) of `sorted`, ascending: the
// smallest value with at least q of the values at or below it; 0 if empty.
std::uint64_t NearestRank(const std::vector<std::uint64_t>& sorted, double q);

// The median of `v` (the mean of the middle two for an even count); 0 if empty.
double Median(std::vector<double> v);

}  // namespace walfs
