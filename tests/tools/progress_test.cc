// ProgressLine (tools/progress.h): '\r' redraws on a terminal, one line per
// step anywhere else.
#include "tools/progress.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace walfs::cli {
namespace {

// What a ProgressLine wrote into a memory stream.
class Captured {
 public:
  Captured() : f_(open_memstream(&buf_, &len_)) {}
  ~Captured() {
    if (f_ != nullptr) std::fclose(f_);
    std::free(buf_);
  }
  std::FILE* file() { return f_; }
  std::string Text() {
    std::fflush(f_);
    return std::string(buf_, len_);
  }

 private:
  char* buf_ = nullptr;
  std::size_t len_ = 0;
  std::FILE* f_;
};

TEST(ProgressLine, InALogEachStepIsOneLineAndItsDetailsAreLeftOut) {
  Captured out;
  {
    ProgressLine p(out.file(), /*terminal=*/false);
    p.Show("level 1/2: 1 users", "0/10 jobs");
    p.Show("level 1/2: 1 users", "5/10 jobs");
    p.Show("level 1/2: 1 users", "10/10 jobs");
    p.Show("level 2/2: 4 users", "0/40 jobs");
    p.Done();
  }
  EXPECT_EQ(out.Text(), "  level 1/2: 1 users\n  level 2/2: 4 users\n");
}

TEST(ProgressLine, OnATerminalTheLineIsRedrawnInPlaceAndClearedWhenDone) {
  Captured out;
  ProgressLine p(out.file(), /*terminal=*/true);
  p.Show("rep 1/1", "a long detail");
  p.Show("rep 1/1", "short");
  p.Done();
  const std::string text = out.Text();
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
  EXPECT_EQ(text, "\r  rep 1/1: a long detail"
                  "\r  rep 1/1: short        "  // padded over the longer line
                  "\r                        \r");
}

TEST(ProgressLine, DoneWithNothingShownWritesNothing) {
  Captured out;
  ProgressLine(out.file(), /*terminal=*/true).Done();
  ProgressLine(out.file(), /*terminal=*/false).Done();
  EXPECT_EQ(out.Text(), "");
}

}  // namespace
}  // namespace walfs::cli
