// FileDevice opened read_only (O_RDONLY) on both engines: it reads, works on
// a file its user cannot write, still takes the image lock, and refuses
// every change -- write, flush, discard, zero, grow, on the synchronous and
// the batched path -- with EROFS before attempting it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/block_device_file.h"
#include "base/mutex.h"
#include "tests/unwritable_file.h"

namespace walfs {
namespace {

constexpr std::uint64_t kReadOnlyFileBytes = 1 << 20;

// A file of kReadOnlyFileBytes holding a known pattern, under the test temp dir.
class PatternFile {
 public:
  PatternFile() : bytes_(kReadOnlyFileBytes) {
    for (std::size_t i = 0; i < bytes_.size(); ++i) bytes_[i] = std::byte((i * 31 + 7) & 0xff);
    path_ = ::testing::TempDir() + "/walfs_read_only_device_XXXXXX";
    const int fd = ::mkstemp(path_.data());
    EXPECT_GE(fd, 0) << std::strerror(errno);
    EXPECT_EQ(::pwrite(fd, bytes_.data(), bytes_.size(), 0), static_cast<ssize_t>(bytes_.size()));
    ::close(fd);
  }
  ~PatternFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }
  const std::vector<std::byte>& bytes() const { return bytes_; }
  // What the file holds now, through a descriptor of its own.
  std::vector<std::byte> Contents() const {
    std::vector<std::byte> out(kReadOnlyFileBytes + 1);
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    const ssize_t n = ::pread(fd, out.data(), out.size(), 0);
    ::close(fd);
    out.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
    return out;
  }

 private:
  std::string path_;
  std::vector<std::byte> bytes_;
};

void ExpectReadOnlyRefusal(const Status& s, std::string_view op) {
  EXPECT_EQ(s.ToErrno(), EROFS) << op << ": " << s.ToString();
  EXPECT_NE(s.message().find("open read-only"), std::string::npos) << op << ": " << s.ToString();
}

class ReadOnlyFileDevice : public ::testing::TestWithParam<IoEngine> {
 protected:
  void SetUp() override {
    auto dev = FileDevice::Open(file_.path(), {.engine = GetParam(), .read_only = true});
    if (!dev.ok() && GetParam() == IoEngine::kIoUring)
      GTEST_SKIP() << "io_uring unavailable here: " << dev.status().ToString();
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    dev_ = std::move(*dev);
    ASSERT_EQ(dev_->engine(), GetParam());
  }

  PatternFile file_;
  std::unique_ptr<FileDevice> dev_;
};

TEST_P(ReadOnlyFileDevice, ReadsWhatTheFileHoldsAndSaysItIsReadOnly) {
  EXPECT_TRUE(dev_->read_only());
  EXPECT_FALSE(dev_->SupportsDiscard());
  EXPECT_NE(dev_->Describe().find("read-only"), std::string::npos) << dev_->Describe();
  std::vector<std::byte> got(kReadOnlyFileBytes);
  ASSERT_TRUE(dev_->Read(0, got.data(), got.size()).ok());
  EXPECT_EQ(got, file_.bytes());
}

TEST_P(ReadOnlyFileDevice, RefusesEveryChangeWithErofsAndLeavesTheFileAsItWas) {
  const std::vector<std::byte> zeros(4096);
  ExpectReadOnlyRefusal(dev_->Write(0, zeros.data(), zeros.size()), "write");
  ExpectReadOnlyRefusal(dev_->Write(4096, zeros.data(), zeros.size(), kIoFua | kIoPreflush),
                        "fua write");
  ExpectReadOnlyRefusal(dev_->Flush(), "flush");
  ExpectReadOnlyRefusal(dev_->Discard(0, 4096), "discard");
  ExpectReadOnlyRefusal(dev_->Zero(8192, 4096), "zero");
  ExpectReadOnlyRefusal(dev_->Grow(2 * kReadOnlyFileBytes), "grow");
  EXPECT_EQ(dev_->size_bytes(), kReadOnlyFileBytes);
  EXPECT_EQ(file_.Contents(), file_.bytes());
}

TEST_P(ReadOnlyFileDevice, RefusesBatchedWritesAndFlushesInOrderOnTheCompletionThread) {
  struct Seen {
    Mutex mu;
    std::vector<int> order GUARDED_BY(mu);
    std::vector<Status> results GUARDED_BY(mu);
    bool on_submitter GUARDED_BY(mu) = false;
  } seen;
  const std::thread::id submitter = std::this_thread::get_id();
  auto note = [&seen, submitter](int i) {
    return [&seen, submitter, i](Status s) {
      MutexLock l(&seen.mu);
      if (std::this_thread::get_id() == submitter) seen.on_submitter = true;
      seen.order.push_back(i);
      seen.results.push_back(std::move(s));
    };
  };
  std::vector<std::byte> first(4096), last(4096);
  const std::vector<std::byte> zeros(4096);
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Read(0, first.data(), first.size(), note(0)));
  batch.push_back(IoRequest::Write(0, zeros.data(), zeros.size(), kIoPreflush | kIoFua, note(1)));
  batch.push_back(IoRequest::Flush(note(2)));
  batch.push_back(IoRequest::Read(kReadOnlyFileBytes - 4096, last.data(), last.size(), note(3)));
  ASSERT_TRUE(dev_->SubmitAndWait(std::move(batch)).ToErrno() == EROFS);
  MutexLock l(&seen.mu);
  EXPECT_EQ(seen.order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_FALSE(seen.on_submitter) << "a callback ran inside Submit()";
  ASSERT_EQ(seen.results.size(), 4u);
  EXPECT_TRUE(seen.results[0].ok()) << seen.results[0].ToString();
  ExpectReadOnlyRefusal(seen.results[1], "batched write");
  ExpectReadOnlyRefusal(seen.results[2], "batched flush");
  EXPECT_TRUE(seen.results[3].ok()) << seen.results[3].ToString();
  EXPECT_EQ(first, std::vector<std::byte>(file_.bytes().begin(), file_.bytes().begin() + 4096));
  EXPECT_EQ(last, std::vector<std::byte>(file_.bytes().end() - 4096, file_.bytes().end()));
  EXPECT_EQ(file_.Contents(), file_.bytes());
}

INSTANTIATE_TEST_SUITE_P(Engines, ReadOnlyFileDevice,
                         ::testing::Values(IoEngine::kIoUring, IoEngine::kSync),
                         [](const ::testing::TestParamInfo<IoEngine>& p) {
                           return std::string(p.param == IoEngine::kIoUring ? "IoUring" : "Pwrite");
                         });

TEST(ReadOnlyFileDeviceOpen, OpensAFileItsUserCannotWriteThatAReadWriteOpenCannot) {
  PatternFile file;
  testing::UnwritableFile unwritable(file.path());
  if (!unwritable.why_not().empty()) GTEST_SKIP() << unwritable.why_not();
  auto rw = FileDevice::Open(file.path(), {});
  ASSERT_FALSE(rw.ok()) << "a read-write open of a file made unwritable by " << unwritable.how();
  EXPECT_TRUE(rw.status().ToErrno() == EPERM || rw.status().ToErrno() == EACCES) << rw.status().ToString();
  EXPECT_TRUE(CannotOpenForWriting(rw.status())) << rw.status().ToString();
  auto ro = FileDevice::Open(file.path(), {.read_only = true});
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  std::vector<std::byte> got(kReadOnlyFileBytes);
  ASSERT_TRUE((*ro)->Read(0, got.data(), got.size()).ok());
  EXPECT_EQ(got, file.bytes());
}

// flock needs no write access: a read-only holder keeps everyone else out,
// read-only or not (a second open in the same process conflicts too, as
// base/file_lock.h says).
TEST(ReadOnlyFileDeviceOpen, TakesTheImageLockOnAReadOnlyDescriptor) {
  PatternFile file;
  testing::UnwritableFile unwritable(file.path());
  if (!unwritable.why_not().empty()) GTEST_SKIP() << unwritable.why_not();
  auto holder = FileDevice::Open(file.path(), {.exclusive = true, .read_only = true});
  ASSERT_TRUE(holder.ok()) << holder.status().ToString();
  auto second = FileDevice::Open(file.path(), {.exclusive = true, .read_only = true});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().ToErrno(), EBUSY) << second.status().ToString();
  holder->reset();
  auto after = FileDevice::Open(file.path(), {.exclusive = true, .read_only = true});
  EXPECT_TRUE(after.ok()) << after.status().ToString();
}

TEST(ReadOnlyFileDeviceOpen, RefusesToCreateAnImageReadOnly) {
  const std::string path = ::testing::TempDir() + "/walfs_read_only_create_never_made";
  ::unlink(path.c_str());
  auto dev = FileDevice::Open(path, {.create = true, .size_bytes = kReadOnlyFileBytes, .read_only = true});
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.status().code(), StatusCode::kInvalidArgument) << dev.status().ToString();
  struct stat st {};
  EXPECT_NE(::stat(path.c_str(), &st), 0) << "the image was made";
}

}  // namespace
}  // namespace walfs
