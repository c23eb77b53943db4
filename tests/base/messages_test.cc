#include "base/messages.h"

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace walfs {
namespace {

class MessagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Messages::Get().SetSink(Messages::Sink::kNone);
    Messages::Get().Clear();
  }
  void TearDown() override { Messages::Get().SetSink(Messages::Sink::kStderr, Severity::kWarning); }
};

std::size_t Lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST_F(MessagesTest, AMessageIsOneStampedLineWithItsSeverity) {
  Message(Severity::kError, "{}: log shut down: {}", "img", "EIO");
  const std::string t = Messages::Get().Text();
  EXPECT_EQ(Lines(t), 1u) << t;
  EXPECT_EQ(t.front(), '[');
  EXPECT_NE(t.find("] walfs error: img: log shut down: EIO\n"), std::string::npos) << t;
}

TEST_F(MessagesTest, ARunOfOneMessageIsKeptOnceWithACount) {
  const std::uint64_t before = Messages::Get().count();
  for (int i = 0; i < 4; ++i) Message(Severity::kError, "same");
  Message(Severity::kInfo, "other");
  const std::string t = Messages::Get().Text();
  EXPECT_EQ(Lines(t), 2u) << t;
  EXPECT_NE(t.find("walfs error: same (repeated 3 more times)\n"), std::string::npos) << t;
  EXPECT_EQ(Messages::Get().count() - before, 5u);
}

TEST_F(MessagesTest, TheRingKeepsTheNewestLines) {
  for (std::size_t i = 0; i < Messages::kCapacity + 10; ++i) Message(Severity::kInfo, "m{}", i);
  const std::string t = Messages::Get().Text();
  EXPECT_EQ(Lines(t), Messages::kCapacity);
  EXPECT_EQ(t.find("info: m9\n"), std::string::npos);
  EXPECT_NE(t.find("info: m10\n"), std::string::npos);
  EXPECT_NE(t.find(fmt::format("info: m{}\n", Messages::kCapacity + 9)), std::string::npos);
}

TEST_F(MessagesTest, ManyThreadsAddingLoseNothing) {
  const std::uint64_t before = Messages::Get().count();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 100; ++i) Message(Severity::kWarning, "t{} i{}", t, i);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(Messages::Get().count() - before, 400u);
  EXPECT_EQ(Lines(Messages::Get().Text()), Messages::kCapacity);
}

TEST_F(MessagesTest, AScopedSinkPutsBackTheSettingItReplaced) {
  Messages::Get().SetSink(Messages::Sink::kStderr, Severity::kError);
  {
    ScopedMessageSink quiet(Messages::Sink::kNone);
    ::testing::internal::CaptureStderr();
    Message(Severity::kError, "kept in the ring only");
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  }
  ::testing::internal::CaptureStderr();
  Message(Severity::kWarning, "below the restored minimum");
  Message(Severity::kError, "to stderr again");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("below the restored minimum"), std::string::npos) << err;
  EXPECT_NE(err.find("walfs error: to stderr again"), std::string::npos) << err;
  EXPECT_NE(Messages::Get().Text().find("kept in the ring only"), std::string::npos);
  const Messages::SinkSetting before = Messages::Get().SetSink(Messages::Sink::kNone);
  EXPECT_EQ(before.sink, Messages::Sink::kStderr);
  EXPECT_EQ(before.min, Severity::kError);
}

TEST_F(MessagesTest, SeverityNamesAreLowerCase) {
  EXPECT_EQ(SeverityName(Severity::kInfo), "info");
  EXPECT_EQ(SeverityName(Severity::kWarning), "warning");
  EXPECT_EQ(SeverityName(Severity::kError), "error");
}

}  // namespace
}  // namespace walfs
