#include "base/report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/check.h"

namespace walfs {

std::string Cell::Text() const {
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  if (const auto* i = std::get_if<std::int64_t>(&value)) return fmt::format("{}", *i);
  return fmt::format("{:.{}f}", std::get<double>(value), precision);
}

void Report::AddRow(std::vector<Cell> row) {
  WALFS_CHECK_MSG(row.size() == columns_.size(), "row width differs from the header");
  rows_.push_back(std::move(row));
}

void Report::Print(std::FILE* out, const std::string& title) const {
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    width[c] = columns_[c].size();
    for (const auto& row : rows_) width[c] = std::max(width[c], row[c].Text().size());
  }
  if (!title.empty()) fmt::print(out, "\n{}\n", title);
  std::string line;
  for (std::size_t c = 0; c < columns_.size(); ++c)
    line += fmt::format("{}{:>{}}", c ? "  " : "", columns_[c], width[c]);
  fmt::print(out, "{}\n{}\n", line, std::string(line.size(), '-'));
  for (const auto& row : rows_) {
    line.clear();
    for (std::size_t c = 0; c < columns_.size(); ++c)
      line += fmt::format("{}{:>{}}", c ? "  " : "", row[c].Text(), width[c]);
    fmt::print(out, "{}\n", line);
  }
  std::fflush(out);
}

Status Report::WriteCsv(const std::string& path) const {
  std::ofstream f(path);
  if (!f) return Status::FromErrno(errno ? errno : EIO, "open " + path);
  for (std::size_t c = 0; c < columns_.size(); ++c) f << (c ? "," : "") << columns_[c];
  f << '\n';
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size(); ++c) f << (c ? "," : "") << row[c].Text();
    f << '\n';
  }
  if (!f.flush()) return Status::IoError("write " + path);
  return Status::Ok();
}

namespace {

nlohmann::ordered_json RowsJson(const Report& r) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& row : r.rows()) {
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    for (std::size_t c = 0; c < row.size(); ++c) {
      std::visit([&](const auto& v) { obj[r.columns()[c]] = v; }, row[c].value);
    }
    rows.push_back(std::move(obj));
  }
  return rows;
}

Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) return Status::FromErrno(errno ? errno : EIO, "open " + path);
  f << text << '\n';
  if (!f.flush()) return Status::IoError("write " + path);
  return Status::Ok();
}

}  // namespace

Status Report::WriteJson(const std::string& path) const { return WriteText(path, RowsJson(*this).dump(2)); }

Status WriteJsonTables(const std::string& path, const std::vector<std::pair<std::string, const Report*>>& tables) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [name, report] : tables) out[name] = RowsJson(*report);
  return WriteText(path, out.dump(2));
}

std::uint64_t NearestRank(const std::vector<std::uint64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double n = static_cast<double>(sorted.size());
  auto rank = static_cast<std::size_t>(std::ceil(std::clamp(q, 0.0, 1.0) * n));
  return sorted[rank == 0 ? 0 : rank - 1];
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace walfs
