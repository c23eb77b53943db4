// FileDevice on both engines (io_uring and pread/pwrite), engine selection
// and fallback, and the error paths a real file can produce: end of file,
// short writes, errno from open.
#include "base/block_device_file.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/mutex.h"
#include "tests/base/byte_pattern.h"

namespace walfs {
namespace {
using walfs::testing::Pattern;

constexpr std::uint64_t kFileBytes = 1 << 20;

// A file of `size` zero bytes under the test temp dir, removed at the end.
class TempFile {
 public:
  explicit TempFile(std::uint64_t size) {
    path_ = ::testing::TempDir() + "/walfs_block_device_XXXXXX";
    const int fd = ::mkstemp(path_.data());
    EXPECT_GE(fd, 0) << std::strerror(errno);
    EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
    ::close(fd);
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }
  // The file's bytes, read through a separate descriptor.
  std::vector<std::byte> Contents(std::uint64_t offset, std::size_t len) const {
    std::vector<std::byte> out(len);
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_EQ(::pread(fd, out.data(), len, static_cast<off_t>(offset)),
              static_cast<ssize_t>(len));
    ::close(fd);
    return out;
  }

 private:
  std::string path_;
};

// Opens `path` with `opts`, skipping the test when io_uring was asked for
// and this machine cannot set up a ring (the reason is printed).
std::unique_ptr<FileDevice> OpenOrSkip(const std::string& path, FileDeviceOptions opts,
                                       std::string* skip) {
  Result<std::unique_ptr<FileDevice>> dev = FileDevice::Open(path, opts);
  if (!dev.ok()) {
    *skip = dev.status().ToString();
    return nullptr;
  }
  return std::move(*dev);
}

class FileDeviceEngine : public ::testing::TestWithParam<IoEngine> {
 protected:
  void SetUp() override {
    file_ = std::make_unique<TempFile>(kFileBytes);
    dev_ = OpenOrSkip(file_->path(), Options(), &skip_);
    if (dev_ == nullptr && GetParam() == IoEngine::kIoUring)
      GTEST_SKIP() << "io_uring unavailable here: " << skip_;
    ASSERT_NE(dev_, nullptr) << skip_;
    ASSERT_EQ(dev_->engine(), GetParam());
  }
  FileDeviceOptions Options() const { return {.engine = GetParam()}; }

  std::unique_ptr<TempFile> file_;
  std::unique_ptr<FileDevice> dev_;
  std::string skip_;
};

TEST_P(FileDeviceEngine, ReportsItsEngineAndGeometry) {
  EXPECT_EQ(dev_->kind(), GetParam() == IoEngine::kIoUring ? "io_uring" : "pwrite");
  EXPECT_EQ(dev_->size_bytes(), kFileBytes);
  EXPECT_FALSE(dev_->direct_io());
  EXPECT_EQ(dev_->io_alignment(), 1u);
  EXPECT_GE(dev_->logical_block_size(), 512u);
  EXPECT_NE(dev_->Describe().find(dev_->kind()), std::string::npos) << dev_->Describe();
  EXPECT_NE(dev_->Describe().find("buffered"), std::string::npos) << dev_->Describe();
}

TEST_P(FileDeviceEngine, SyncCallsRoundTrip) {
  const std::vector<std::byte> data = Pattern(10000, 1);
  ASSERT_TRUE(dev_->Write(4097, data.data(), data.size()).ok());
  ASSERT_TRUE(dev_->Write(65536, data.data(), 4096, kIoFua | kIoPreflush).ok());
  ASSERT_TRUE(dev_->Flush().ok());
  std::vector<std::byte> got(data.size());
  ASSERT_TRUE(dev_->Read(4097, got.data(), got.size()).ok());
  EXPECT_EQ(got, data);
  EXPECT_EQ(file_->Contents(4097, data.size()), data);
  EXPECT_EQ(file_->Contents(65536, 4096),
            std::vector<std::byte>(data.begin(), data.begin() + 4096));
}

TEST_P(FileDeviceEngine, DiscardPunchesAHoleThatReadsAsZerosAndFreesTheFilesBlocks) {
  const std::vector<std::byte> data = Pattern(kFileBytes, 4);
  ASSERT_TRUE(dev_->Write(0, data.data(), data.size()).ok());
  ASSERT_TRUE(dev_->Flush().ok());
  struct stat before {};
  ASSERT_EQ(::stat(file_->path().c_str(), &before), 0);
  ASSERT_TRUE(dev_->SupportsDiscard());
  Status s = dev_->Discard(64 << 10, 512 << 10);
  if (s.code() == StatusCode::kNotSupported) GTEST_SKIP() << "no hole punching here: " << s.ToString();
  ASSERT_TRUE(s.ok()) << s.ToString();
  struct stat after {};
  ASSERT_EQ(::stat(file_->path().c_str(), &after), 0);
  EXPECT_EQ(after.st_size, before.st_size);  // KEEP_SIZE
  EXPECT_LE(after.st_blocks, before.st_blocks - (512 << 10) / 512 + 64)
      << "the punched range's blocks went back to the filesystem";
  EXPECT_EQ(file_->Contents(64 << 10, 512 << 10), std::vector<std::byte>(512 << 10));
  EXPECT_EQ(file_->Contents(0, 64 << 10),
            std::vector<std::byte>(data.begin(), data.begin() + (64 << 10)));
  EXPECT_EQ(file_->Contents(576 << 10, 64 << 10),
            std::vector<std::byte>(data.begin() + (576 << 10), data.begin() + (640 << 10)));
  EXPECT_EQ(dev_->stats().bytes_discarded, 512u << 10);
  EXPECT_EQ(dev_->Discard(kFileBytes - 4096, 8192).code(), StatusCode::kInvalidArgument);
}

// Zero (mkfs's log): a hole on an image file -- zeros that cost no space --
// and the same range checks as Discard.
TEST_P(FileDeviceEngine, ZeroMakesTheRangeReadAsZerosWithoutWritingThem) {
  const std::vector<std::byte> data = Pattern(kFileBytes, 5);
  ASSERT_TRUE(dev_->Write(0, data.data(), data.size()).ok());
  ASSERT_TRUE(dev_->Flush().ok());
  struct stat before {};
  ASSERT_EQ(::stat(file_->path().c_str(), &before), 0);
  const std::uint64_t written = dev_->stats().bytes_written;
  ASSERT_TRUE(dev_->Zero(64 << 10, 512 << 10).ok());
  EXPECT_EQ(file_->Contents(64 << 10, 512 << 10), std::vector<std::byte>(512 << 10));
  EXPECT_EQ(file_->Contents(0, 64 << 10), std::vector<std::byte>(data.begin(), data.begin() + (64 << 10)));
  struct stat after {};
  ASSERT_EQ(::stat(file_->path().c_str(), &after), 0);
  EXPECT_EQ(after.st_size, before.st_size);
  if (dev_->stats().bytes_written == written) {  // punched, not written
    EXPECT_LE(after.st_blocks, before.st_blocks - (512 << 10) / 512 + 64);
  }
  EXPECT_EQ(dev_->Zero(kFileBytes - 4096, 8192).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dev_->Zero(100, 512).code(), StatusCode::kInvalidArgument);
}

TEST_P(FileDeviceEngine, BatchedRequestsRoundTripWithEveryFlag) {
  std::vector<std::vector<std::byte>> data;
  for (unsigned i = 0; i < 8; ++i) data.push_back(Pattern(8192, i));
  std::vector<IoRequest> writes;
  const IoFlags flags[] = {0, kIoFua, kIoPreflush, kIoFua | kIoPreflush};
  for (unsigned i = 0; i < 8; ++i)
    writes.push_back(IoRequest::Write(i * 16384, data[i].data(), 8192, flags[i % 4], nullptr));
  writes.push_back(IoRequest::Flush(nullptr));
  ASSERT_TRUE(dev_->SubmitAndWait(std::move(writes)).ok());
  std::vector<std::vector<std::byte>> got(8, std::vector<std::byte>(8192));
  std::vector<IoRequest> reads;
  for (unsigned i = 0; i < 8; ++i)
    reads.push_back(IoRequest::Read(i * 16384, got[i].data(), 8192, nullptr));
  ASSERT_TRUE(dev_->SubmitAndWait(std::move(reads)).ok());
  for (unsigned i = 0; i < 8; ++i) {
    EXPECT_EQ(got[i], data[i]) << i;
    EXPECT_EQ(file_->Contents(i * 16384, 8192), data[i]) << i;
  }
  const BlockDeviceStats st = dev_->stats();
  EXPECT_EQ(st.fua_writes, 4u);
  EXPECT_EQ(st.preflush_writes, 4u);
  EXPECT_EQ(st.flushes, 1u);
  EXPECT_EQ(st.batches, 2u);
}

TEST_P(FileDeviceEngine, CallbacksRunInSubmissionOrderOnTheCompletionThread) {
  // A large durable write first, then small reads that the kernel will
  // usually finish first: the callbacks must still come in order.
  constexpr std::size_t kBig = 512 * 1024;
  const std::vector<std::byte> big = Pattern(kBig, 5);
  std::vector<std::vector<std::byte>> small(32, std::vector<std::byte>(512));
  Mutex mu;
  std::vector<int> order;
  bool completion_thread = true;
  std::vector<IoRequest> batch;
  auto record = [&](int i) {
    return [&, i](Status s) {
      EXPECT_TRUE(s.ok()) << s.ToString();
      MutexLock l(&mu);
      order.push_back(i);
      completion_thread &= internal::IsCompletionThread();
    };
  };
  batch.push_back(IoRequest::Write(0, big.data(), kBig, kIoFua | kIoPreflush, record(0)));
  for (int i = 0; i < 32; ++i)
    batch.push_back(IoRequest::Read(kBig + i * 4096, small[i].data(), 512, record(i + 1)));
  ASSERT_TRUE(dev_->SubmitAndWait(std::move(batch)).ok());
  MutexLock l(&mu);
  ASSERT_EQ(order.size(), 33u);
  for (int i = 0; i < 33; ++i) EXPECT_EQ(order[i], i);
  EXPECT_TRUE(completion_thread);
}

TEST_P(FileDeviceEngine, MoreRequestsThanRingEntriesAllComplete) {
  dev_.reset();
  FileDeviceOptions opts = Options();
  opts.ring_entries = 4;  // a preflush write takes 2 of them
  dev_ = OpenOrSkip(file_->path(), opts, &skip_);
  ASSERT_NE(dev_, nullptr) << skip_;
  std::vector<std::vector<std::byte>> data;
  for (unsigned i = 0; i < 100; ++i) data.push_back(Pattern(4096, i));
  std::atomic<int> next{0};
  std::atomic<bool> in_order{true};
  std::vector<IoRequest> batch;
  for (unsigned i = 0; i < 100; ++i)
    batch.push_back(IoRequest::Write(i * 4096, data[i].data(), 4096,
                                     i % 3 == 0 ? kIoPreflush : 0, [&, i](Status s) {
                                       EXPECT_TRUE(s.ok()) << s.ToString();
                                       if (next.fetch_add(1) != static_cast<int>(i))
                                         in_order = false;
                                     }));
  ASSERT_TRUE(dev_->SubmitAndWait(std::move(batch)).ok());
  EXPECT_EQ(next.load(), 100);
  EXPECT_TRUE(in_order.load());
  for (unsigned i = 0; i < 100; i += 7) EXPECT_EQ(file_->Contents(i * 4096, 4096), data[i]);
}

TEST_P(FileDeviceEngine, ZeroLengthRequestsComplete) {
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Read(100, nullptr, 0, nullptr));
  batch.push_back(IoRequest::Write(kFileBytes, nullptr, 0, 0, nullptr));
  batch.push_back(IoRequest::Write(0, nullptr, 0, kIoPreflush | kIoFua, nullptr));
  EXPECT_TRUE(dev_->SubmitAndWait(std::move(batch)).ok());
  EXPECT_TRUE(dev_->Write(0, nullptr, 0, kIoPreflush).ok());
}

TEST_P(FileDeviceEngine, OutOfRangeRequestsAreRefused) {
  std::vector<std::byte> buf(4096);
  EXPECT_EQ(dev_->Read(kFileBytes - 1, buf.data(), 2).code(), StatusCode::kInvalidArgument);
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Write(kFileBytes, buf.data(), 1, 0, [](Status) {}));
  EXPECT_EQ(dev_->Submit(std::move(batch)).ToErrno(), EINVAL);
}

TEST_P(FileDeviceEngine, ReadingPastEndOfFileIsAnIoError) {
  // The file shrinks under the device: a read that crosses the new end gets
  // a short read, is continued, meets end-of-file, and says so.
  ASSERT_EQ(::truncate(file_->path().c_str(), 16384), 0);
  std::vector<std::byte> buf(16384);
  Status sync = dev_->Read(8192, buf.data(), buf.size());
  EXPECT_EQ(sync.code(), StatusCode::kIoError) << sync.ToString();
  EXPECT_EQ(sync.ToErrno(), EIO);
  EXPECT_NE(sync.ToString().find("unexpected end of file at offset 16384"), std::string::npos)
      << sync.ToString();
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Read(8192, buf.data(), buf.size(), nullptr));
  Status async = dev_->SubmitAndWait(std::move(batch));
  EXPECT_EQ(async.ToErrno(), EIO);
  EXPECT_EQ(dev_->short_io_continued(), 2u) << "each read was short once, then met EOF";
  EXPECT_NE(async.ToString().find("unexpected end of file at offset 16384"), std::string::npos)
      << async.ToString();
}

// RLIMIT_FSIZE makes the kernel write only up to the limit (a short write)
// and refuse the rest with EFBIG: the device must continue after the short
// write, land every byte it can, and then report EFBIG exactly.
TEST_P(FileDeviceEngine, ShortWritesAreContinuedUntilTheKernelRefusesWithItsErrno) {
  constexpr std::uint64_t kLimit = 256 * 1024 + 1000;
  const std::vector<std::byte> sync_data = Pattern(8192, 7), async_data = Pattern(8192, 8);
  struct rlimit old = {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  struct sigaction ignore = {}, old_action = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &old_action), 0);
  struct rlimit limited = old;
  limited.rlim_cur = kLimit;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);

  // Both writes cross the limit: 1000 and then 500 bytes land.
  Status sync = dev_->Write(kLimit - 1000, sync_data.data(), sync_data.size());
  std::vector<IoRequest> batch;
  batch.push_back(
      IoRequest::Write(kLimit - 500, async_data.data(), async_data.size(), kIoFua, nullptr));
  Status async = dev_->SubmitAndWait(std::move(batch));

  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  ASSERT_EQ(::sigaction(SIGXFSZ, &old_action, nullptr), 0);
  EXPECT_EQ(sync.ToErrno(), EFBIG) << sync.ToString();
  EXPECT_EQ(async.ToErrno(), EFBIG) << async.ToString();
  EXPECT_EQ(dev_->short_io_continued(), 2u) << "one continuation per write";
  EXPECT_EQ(file_->Contents(kLimit - 1000, 500),
            std::vector<std::byte>(sync_data.begin(), sync_data.begin() + 500));
  EXPECT_EQ(file_->Contents(kLimit - 500, 500),
            std::vector<std::byte>(async_data.begin(), async_data.begin() + 500));
}

TEST_P(FileDeviceEngine, DirectIoRoundTripsAndRefusesUnalignedRequests) {
  dev_.reset();
  FileDeviceOptions opts = Options();
  opts.direct_io = true;
  dev_ = OpenOrSkip(file_->path(), opts, &skip_);
  ASSERT_NE(dev_, nullptr) << skip_;
  if (!dev_->direct_io()) GTEST_SKIP() << dev_->direct_io_reason();
  const std::size_t align = dev_->io_alignment();
  ASSERT_GE(align, 512u);
  auto* raw = static_cast<std::byte*>(std::aligned_alloc(align, 4 * align));
  std::unique_ptr<std::byte, decltype(&std::free)> buf(raw, &std::free);
  const std::vector<std::byte> data = Pattern(2 * align, 9);
  std::memcpy(raw, data.data(), data.size());
  ASSERT_TRUE(dev_->Write(align, raw, 2 * align, kIoFua).ok());
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Read(align, raw + 2 * align, 2 * align, nullptr));
  ASSERT_TRUE(dev_->SubmitAndWait(std::move(batch)).ok());
  EXPECT_EQ(std::memcmp(raw + 2 * align, data.data(), data.size()), 0);
  EXPECT_EQ(dev_->Write(1, raw, align).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dev_->Write(0, raw + 1, align).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dev_->Read(0, raw, align - 1).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dev_->Describe().find("O_DIRECT"), std::string::npos);
}

TEST_P(FileDeviceEngine, ConcurrentThreadsShareOneDevice) {
  constexpr int kThreads = 4, kRounds = 50;
  constexpr std::size_t kSlice = 16384;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::uint64_t base = static_cast<std::uint64_t>(t) * kSlice;
      for (int r = 0; r < kRounds; ++r) {
        const std::vector<std::byte> data = Pattern(kSlice, t * 100 + r);
        std::vector<std::byte> got(kSlice);
        std::vector<IoRequest> batch;
        batch.push_back(IoRequest::Write(base, data.data(), kSlice, r % 4 ? 0 : kIoFua, nullptr));
        if (r % 5 == 0) batch.push_back(IoRequest::Flush(nullptr));
        Status s = r % 2 ? dev_->Write(base, data.data(), kSlice)
                         : dev_->SubmitAndWait(std::move(batch));
        if (!s.ok() || !dev_->Read(base, got.data(), kSlice).ok() || got != data) ++failures;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_P(FileDeviceEngine, DestroyingTheDeviceWaitsForInFlightRequests) {
  std::atomic<int> done{0};
  const std::vector<std::byte> data = Pattern(65536, 11);
  for (int i = 0; i < 8; ++i) {
    std::vector<IoRequest> batch;
    batch.push_back(IoRequest::Write(i * 65536, data.data(), data.size(), kIoFua,
                                     [&](Status s) { EXPECT_TRUE(s.ok()); ++done; }));
    ASSERT_TRUE(dev_->Submit(std::move(batch)).ok());
  }
  dev_.reset();
  EXPECT_EQ(done.load(), 8);
  EXPECT_EQ(file_->Contents(7 * 65536, 65536), data);
}

TEST_P(FileDeviceEngine, CallbacksMaySubmitWhileTheDeviceIsBeingDestroyed) {
  // Each completion submits the next write; the destructor must wait for
  // the whole chain, not just for what was in flight when it was called.
  constexpr int kChain = 20;
  const std::vector<std::byte> data = Pattern(4096, 12);
  std::atomic<int> done{0};
  std::function<void(Status)> next = [&](Status s) {
    EXPECT_TRUE(s.ok()) << s.ToString();
    const int n = ++done;
    if (n == kChain) return;
    std::vector<IoRequest> batch;
    batch.push_back(IoRequest::Write(n * 4096, data.data(), 4096, 0, next));
    EXPECT_TRUE(dev_->Submit(std::move(batch)).ok());
  };
  std::vector<IoRequest> first;
  first.push_back(IoRequest::Write(0, data.data(), 4096, 0, next));
  ASSERT_TRUE(dev_->Submit(std::move(first)).ok());
  FileDevice* raw = dev_.get();
  delete raw;  // dev_ still points at it while the callbacks run
  static_cast<void>(dev_.release());
  EXPECT_EQ(done.load(), kChain);
  EXPECT_EQ(file_->Contents((kChain - 1) * 4096, 4096), data);
}

INSTANTIATE_TEST_SUITE_P(Engines, FileDeviceEngine,
                         ::testing::Values(IoEngine::kIoUring, IoEngine::kSync),
                         [](const ::testing::TestParamInfo<IoEngine>& p) {
                           return std::string(p.param == IoEngine::kIoUring ? "IoUring"
                                                                            : "Pwrite");
                         });

TEST(FileDevice, AutoFallsBackToPwriteWhenTheRingCannotBeSetUpAndSaysWhy) {
  TempFile file(kFileBytes);
  // A ring of 0 entries is refused by io_uring_queue_init (EINVAL), as a
  // seccomp filter or kernel.io_uring_disabled would refuse it (EPERM).
  Result<std::unique_ptr<FileDevice>> dev =
      FileDevice::Open(file.path(), {.engine = IoEngine::kAuto, .ring_entries = 0});
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ((*dev)->engine(), IoEngine::kSync);
  EXPECT_EQ((*dev)->kind(), "pwrite");
  const std::string& why = (*dev)->engine_reason();
  EXPECT_NE(why.find("io_uring unavailable"), std::string::npos) << why;
  EXPECT_NE(why.find("io_uring_queue_init(0 entries)"), std::string::npos) << why;
  EXPECT_NE(why.find(std::strerror(EINVAL)), std::string::npos) << why;
  EXPECT_NE((*dev)->Describe().find(why), std::string::npos) << (*dev)->Describe();
  // And it works.
  const std::vector<std::byte> data = Pattern(4096, 1);
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Write(0, data.data(), 4096, kIoFua, nullptr));
  EXPECT_TRUE((*dev)->SubmitAndWait(std::move(batch)).ok());
  EXPECT_EQ(file.Contents(0, 4096), data);
}

// Refuses io_uring_setup(2) with EPERM in the calling process from now on,
// as a container runtime's seccomp profile does.
bool RefuseIoUringSetup() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

#if defined(__x86_64__)
TEST(FileDevice, ASeccompFilterRefusingIoUringMeansPwriteAndSaysWhy) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TempFile file(kFileBytes);
  // In a child process: the filter cannot be removed once installed.
  EXPECT_EXIT(
      {
        if (!RefuseIoUringSetup()) std::_Exit(2);
        auto dev = FileDevice::Open(file.path(), {});
        if (!dev.ok()) std::_Exit(3);
        std::fprintf(stderr, "%s\n", (*dev)->Describe().c_str());
        const bool fell_back = (*dev)->engine() == IoEngine::kSync &&
                               (*dev)->engine_reason().find("seccomp") != std::string::npos;
        auto strict = FileDevice::Open(file.path(), {.engine = IoEngine::kIoUring});
        const int code = fell_back && strict.status().ToErrno() == EPERM ? 0 : 1;
        // _Exit runs no destructor.  The child re-ran the test from its start
        // (threadsafe style), so this `file` is the child's own copy.
        dev->reset();
        ::unlink(file.path().c_str());
        std::_Exit(code);
      },
      ::testing::ExitedWithCode(0),
      "pwrite \\(auto: io_uring unavailable: .*Operation not permitted");
}
#endif

TEST(FileDevice, ExplicitIoUringFailsInsteadOfFallingBack) {
  TempFile file(kFileBytes);
  Result<std::unique_ptr<FileDevice>> dev =
      FileDevice::Open(file.path(), {.engine = IoEngine::kIoUring, .ring_entries = 0});
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.status().ToErrno(), EINVAL);
  EXPECT_NE(dev.status().ToString().find("io_uring_queue_init"), std::string::npos);
}

TEST(FileDevice, AutoTakesPwriteForAFileInMemoryWhenAskedAndSaysWhy) {
  struct statfs shm {};
  if (::statfs("/dev/shm", &shm) != 0 || shm.f_type != TMPFS_MAGIC) GTEST_SKIP() << "/dev/shm is not a tmpfs here";
  std::string path = "/dev/shm/walfs_block_device_XXXXXX";
  const int fd = ::mkstemp(path.data());
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kFileBytes)), 0);
  EXPECT_EQ(InMemoryFilesystem(fd), "tmpfs");
  ::close(fd);
  auto dev = FileDevice::Open(path, {.engine = IoEngine::kAuto, .pwrite_in_memory = true});
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ((*dev)->kind(), "pwrite");
  EXPECT_EQ((*dev)->engine_reason(), "auto: the file is in memory (tmpfs), where pwrite is one thread hop fewer");
  EXPECT_NE((*dev)->Describe().find("in memory (tmpfs)"), std::string::npos) << (*dev)->Describe();
  const std::vector<std::byte> data = Pattern(4096, 3);
  std::vector<IoRequest> batch;
  batch.push_back(IoRequest::Write(4096, data.data(), 4096, kIoFua, nullptr));
  EXPECT_TRUE((*dev)->SubmitAndWait(std::move(batch)).ok());
  dev->reset();
  // Without the option, or with io_uring asked for by name, the rule does not apply.
  auto plain = FileDevice::Open(path, {});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->engine_reason().find("in memory"), std::string::npos) << (*plain)->engine_reason();
  plain->reset();
  auto named = FileDevice::Open(path, {.engine = IoEngine::kIoUring, .pwrite_in_memory = true});
  if (named.ok()) {  // else io_uring is unavailable here, which another spec covers
    EXPECT_EQ((*named)->kind(), "io_uring");
    named->reset();
  }
  ::unlink(path.c_str());
}

TEST(FileDevice, AFileOutsideTmpfsAndRamfsIsNotInMemory) {
  const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(InMemoryFilesystem(fd), "");
  ::close(fd);
  EXPECT_EQ(InMemoryFilesystem(-1), "") << "a bad descriptor is not in memory either";
}

TEST(FileDevice, EngineChoiceIsReported) {
  TempFile file(kFileBytes);
  auto sync = FileDevice::Open(file.path(), {.engine = IoEngine::kSync});
  ASSERT_TRUE(sync.ok());
  EXPECT_EQ((*sync)->engine_reason(), "engine=sync requested");
  auto autod = FileDevice::Open(file.path(), {});
  ASSERT_TRUE(autod.ok());
  if ((*autod)->engine() == IoEngine::kIoUring) {
    EXPECT_EQ((*autod)->engine_reason(), "auto: io_uring works");
  } else {
    EXPECT_NE((*autod)->engine_reason().find("io_uring unavailable"), std::string::npos);
  }
}

TEST(FileDevice, ParsesEngineOptionValues) {
  EXPECT_EQ(*ParseIoEngine("auto"), IoEngine::kAuto);
  EXPECT_EQ(*ParseIoEngine("io_uring"), IoEngine::kIoUring);
  EXPECT_EQ(*ParseIoEngine("sync"), IoEngine::kSync);
  EXPECT_EQ(ParseIoEngine("aio").status().code(), StatusCode::kInvalidArgument);
}

TEST(FileDevice, OpenFailuresCarryTheErrno) {
  auto missing = FileDevice::Open(::testing::TempDir() + "/walfs_no_such_dir/image");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().ToErrno(), ENOENT);
  auto dir = FileDevice::Open(::testing::TempDir());
  EXPECT_EQ(dir.status().ToErrno(), EISDIR) << dir.status().ToString();
  const std::string fifo = ::testing::TempDir() + "/walfs_block_device_fifo_" +
                           std::to_string(::getpid());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto pipe = FileDevice::Open(fifo);
  ::unlink(fifo.c_str());
  EXPECT_EQ(pipe.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(pipe.status().ToString().find("neither a regular file nor a block device"),
            std::string::npos);
}

TEST(FileDevice, SizesAreCheckedAndCreateGrowsTheFile) {
  TempFile empty(0);
  EXPECT_EQ(FileDevice::Open(empty.path()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(FileDevice::Open(empty.path(), {.size_bytes = 8192}).status().code(),
            StatusCode::kInvalidArgument);
  auto grown = FileDevice::Open(empty.path(), {.create = true, .size_bytes = 8192});
  ASSERT_TRUE(grown.ok()) << grown.status().ToString();
  EXPECT_EQ((*grown)->size_bytes(), 8192u);
  struct stat st = {};
  ASSERT_EQ(::stat(empty.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 8192);
  // A smaller device than the file is fine: the rest is not used.
  auto part = FileDevice::Open(empty.path(), {.size_bytes = 4096});
  ASSERT_TRUE(part.ok());
  EXPECT_EQ((*part)->size_bytes(), 4096u);
}

}  // namespace
}  // namespace walfs
