#include "bench/common/report.h"

#include <algorithm>
#include <cerrno>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/check.h"

namespace walfs::bench {

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

Status Report::WriteJson(const std::string& path) const {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : rows_) {
    nlohmann::json obj = nlohmann::json::object();
    for (std::size_t c = 0; c < row.size(); ++c) {
      std::visit([&](const auto& v) { obj[columns_[c]] = v; }, row[c].value);
    }
    rows.push_back(std::move(obj));
  }
  std::ofstream f(path);
  if (!f) return Status::FromErrno(errno ? errno : EIO, "open " + path);
  f << rows.dump(2) << '\n';
  if (!f.flush()) return Status::IoError("write " + path);
  return Status::Ok();
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace walfs::bench
