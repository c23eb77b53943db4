// Specs of the ErrorRecorder: damage found while mounted is counted once
// per distinct error, logged off the finder's thread and never in a storm,
// and only kept in memory (and said so) where nothing can be logged.
#include "fs/error_recorder.h"

#include <atomic>
#include <cerrno>
#include <string>

#include <gtest/gtest.h>

#include "base/messages.h"
#include "base/mutex.h"

namespace walfs::fs {
namespace {

struct Logged {
  Mutex mu;
  std::vector<format::ErrorRecord> records GUARDED_BY(mu);
  std::size_t size() {
    MutexLock l(&mu);
    return records.size();
  }
};

ErrorRecorder::Options OptionsFor(Logged* logged, std::atomic<bool>* writable, std::int64_t interval_ms = 0) {
  return {.image = "img",
          .initial = {},
          .can_log = [writable] { return writable->load(); },
          .log =
              [logged](const format::ErrorRecord& r) {
                MutexLock l(&logged->mu);
                logged->records.push_back(r);
                return Status::Ok();
              },
          .min_interval_ms = interval_ms};
}

TEST(ErrorRecorder, TheSameErrorFoundAgainIsCountedOnce) {
  Messages::Get().Clear();
  Logged logged;
  std::atomic<bool> writable{true};
  ErrorRecorder rec(OptionsFor(&logged, &writable));
  const Status bad = Status::Corruption("directory at block 9: CRC 0x1 does not match 0x2");
  for (int i = 0; i < 100; ++i) rec.Note("directory block CRC", 0, 9, bad);
  rec.Note("inode decode", 131, 4, bad);
  rec.Stop(true);
  EXPECT_EQ(rec.noted(), 2u);
  const format::ErrorRecord r = rec.record();
  EXPECT_EQ(r.count, 2u);
  EXPECT_EQ(r.first.what, "directory block CRC");
  EXPECT_EQ(r.first.blkno, 9u);
  EXPECT_EQ(r.first.err, static_cast<std::uint32_t>(EUCLEAN));
  EXPECT_EQ(r.last.what, "inode decode");
  EXPECT_EQ(r.last.ino, 131u);
  ASSERT_GE(logged.size(), 1u);
  MutexLock l(&logged.mu);
  EXPECT_EQ(logged.records.back(), r) << "the last update logged is the whole record";
  const std::string text = Messages::Get().Text();
  EXPECT_NE(text.find("img: damage found: directory block CRC (block 9)"), std::string::npos) << text;
  EXPECT_NE(text.find("unmount it and run fsck.walfs -f -y img"), std::string::npos) << text;
}

TEST(ErrorRecorder, UpdatesAreRateLimitedNotOnePerError) {
  Logged logged;
  std::atomic<bool> writable{true};
  ErrorRecorder rec(OptionsFor(&logged, &writable, /*interval_ms=*/60'000));
  for (std::uint64_t b = 1; b <= 50; ++b) rec.Note("directory block CRC", 0, b, Status::Corruption("bad"));
  rec.Stop(true);
  EXPECT_EQ(rec.record().count, 50u);
  // The first update, then (within the interval) only the one at Stop.
  EXPECT_LE(logged.size(), 2u);
  MutexLock l(&logged.mu);
  EXPECT_EQ(logged.records.back().count, 50u);
}

TEST(ErrorRecorder, ARecordThatCannotBeLoggedIsKeptInMemoryAndSaysSo) {
  Messages::Get().Clear();
  Logged logged;
  std::atomic<bool> writable{false};  // read-only or shut down
  ErrorRecorder rec(OptionsFor(&logged, &writable));
  rec.Note("I/O error on read", 0, 12, Status::IoError("read failed"));
  rec.Stop(true);
  EXPECT_EQ(logged.size(), 0u);
  EXPECT_EQ(rec.record().count, 1u);
  const std::string text = Messages::Get().Text();
  EXPECT_NE(text.find("kept in memory only"), std::string::npos) << text;
}

TEST(ErrorRecorder, ErrorsRecordedBeforeAreCountedOn) {
  Logged logged;
  std::atomic<bool> writable{true};
  ErrorRecorder::Options o = OptionsFor(&logged, &writable);
  o.initial.count = 4;
  o.initial.first = o.initial.last = {.time_s = 1, .ino = 5, .blkno = 0, .err = 117, .what = "inode decode"};
  ErrorRecorder rec(o);
  EXPECT_EQ(rec.record(), o.initial);
  rec.Stop(true);
  EXPECT_EQ(logged.size(), 0u) << "nothing new: nothing logged";
}

}  // namespace
}  // namespace walfs::fs
