// ProgressLine: what a long-running program is doing, on stderr, the way
// STYLE.md rule 24 asks.  On a terminal the line is redrawn in place with
// '\r' as often as Show() is called; anywhere else (a CI log, a file, a
// pipe) each new step is printed once, as its own line, and the details
// that change within a step are left out, so a log gets one line per step
// instead of thousands of characters of overwritten text.
//
//   cli::ProgressLine progress;                    // stderr
//   for (...) progress.Show(fmt::format("level {}/{}", i, n), fmt::format("{} jobs", done));
//   progress.Done();                               // clears the line on a terminal
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace walfs::cli {

class ProgressLine {
 public:
  explicit ProgressLine(std::FILE* out = stderr);
  // `terminal` chosen by the caller (tests).
  ProgressLine(std::FILE* out, bool terminal) : out_(out), terminal_(terminal) {}
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { Done(); }

  // Shows `step` (what is being done) and `detail` (how far it got).
  void Show(std::string_view step, std::string_view detail = {});
  // Ends the progress display: a terminal's line is cleared.  Idempotent.
  void Done();

  bool terminal() const { return terminal_; }

 private:
  std::FILE* out_;
  bool terminal_;
  std::string last_step_;       // not a terminal: the step printed last
  std::size_t drawn_width_ = 0;  // a terminal: the widest line drawn (what Done() clears)
};

}  // namespace walfs::cli
