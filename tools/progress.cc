#include "tools/progress.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

namespace walfs::cli {

ProgressLine::ProgressLine(std::FILE* out) : ProgressLine(out, isatty(fileno(out)) == 1) {}

void ProgressLine::Show(std::string_view step, std::string_view detail) {
  if (!terminal_) {
    if (step == last_step_) return;
    last_step_ = step;
    fmt::print(out_, "  {}\n", step);
    std::fflush(out_);
    return;
  }
  const std::string line =
      detail.empty() ? fmt::format("  {}", step) : fmt::format("  {}: {}", step, detail);
  // Pad over what the previous, longer line left.
  fmt::print(out_, "\r{:<{}}", line, std::max(line.size(), drawn_width_));
  std::fflush(out_);
  drawn_width_ = std::max(line.size(), drawn_width_);  // what is on the screen: padding included
}

void ProgressLine::Done() {
  if (!terminal_ || drawn_width_ == 0) return;
  fmt::print(out_, "\r{:{}}\r", "", drawn_width_);
  std::fflush(out_);
  drawn_width_ = 0;
}

}  // namespace walfs::cli
