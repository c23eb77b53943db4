// I/O errors through the mount: a walfs mounted with `-o fault_injection`
// has MNT/.walfs/fault (base/block_device_fault_command.h), which fails the
// image's writes, flushes or reads on command.  What must hold:
//  - a failed log or metadata write shuts the filesystem down: the call gets
//    EIO, every later change gets EIO, the messages say why, and the next
//    mount recovers the log with everything fsynced before intact;
//  - a failed flush fails the fsync that needed it (never a false success);
//  - a failed file-data write is that write's EIO only: the filesystem
//    stays up and its image stays clean;
//  - a failed metadata read is EIO for the calls that needed the block,
//    never a crash, and the filesystem works again once reads do.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstddef>
#include <string>

#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

class IoError : public MountedFs {
 public:
  // Only the spec's own calls write: no timed or lazy log push, and no
  // writeback push, can take an armed fault first (a lazy push runs 5 ms
  // after a create, which on a loaded machine can come before the spec's
  // next write reaches the device).
  static void SetUpTestSuite() {
    MountSuite({.image_size = "256m",
                .options = {"fault_injection", "commit=86400", "lazy_commit_ms=0", "wb_push_ms=0"}});
  }

 protected:
  // Every spec starts on a fresh mount of the suite's image: a fault hits
  // the first write after it is armed, and that must be the spec's own, not
  // the AIL writing back an earlier spec's metadata or the kernel flushing
  // its dirty pages (the suite shares one mount, CMakeLists.txt).
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
    Remount();
  }
  std::string Ctl(const std::string& name) const { return Root() + "/.walfs/" + name; }
  void Fault(const std::string& command) {
    const int fd = open(Ctl("fault").c_str(), O_WRONLY);
    ASSERT_SYS(fd);
    const ssize_t n = write(fd, command.data(), command.size());
    const int err = errno;
    close(fd);
    ASSERT_EQ(n, static_cast<ssize_t>(command.size())) << command << ": " << strerrorname_np(err);
  }
  // Creates `rel` with `data` and fsyncs it; the errno of the first call that
  // failed, or 0.
  int WriteAndFsync(const std::string& rel, const std::string& data) {
    const int fd = open(Path(rel).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return errno;
    int err = 0;
    if (write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size()) || fsync(fd) != 0) err = errno;
    close(fd);
    return err;
  }
  bool ShutDown() { return ReadFile(Ctl("stats")).find("log_shutdown 1") != std::string::npos; }
};

TEST_F(IoError, AFailedLogWriteShutsTheFilesystemDownAndTheNextMountRecoversWhatWasSynced) {
  ASSERT_EQ(WriteAndFsync("kept", "fsynced before the fault"), 0);
  Fault("writes 1");
  EXPECT_EQ(WriteAndFsync("lost", ""), EIO) << "the fsync of a create is a log write";
  EXPECT_TRUE(ShutDown());
  EXPECT_ERRNO(EIO, mkdir(Path("d").c_str(), 0755)) << "every change after a shutdown";
  EXPECT_ERRNO(EIO, unlink(Path("kept").c_str()));
  const std::string messages = ReadFile(Ctl("messages"));
  EXPECT_NE(messages.find("walfs error: log shut down"), std::string::npos) << messages;
  EXPECT_NE(messages.find("injected write failure"), std::string::npos) << messages;
  RemountAfterShutdown();
  EXPECT_EQ(ReadFile(Path("kept")), "fsynced before the fault");
  EXPECT_NE(ReadFile(Ctl("messages")).find("log recovered"), std::string::npos);
  ASSERT_EQ(WriteAndFsync("after", "the recovered filesystem takes changes"), 0);
}

TEST_F(IoError, AFailedFlushFailsTheFsyncThatNeededIt) {
  ASSERT_EQ(WriteAndFsync("before", "x"), 0);  // the test's directory too
  const int fd = open(Path("f").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_SYS(fd);
  ASSERT_EQ(write(fd, "data", 4), 4);
  Fault("flushes");
  EXPECT_ERRNO(EIO, fsync(fd)) << "an fsync whose flush failed must not succeed";
  Fault("clear");
  close(fd);
  // A failed log flush shuts the log down (the record's durability is
  // unknown); a failed data flush alone need not.  Either way the next
  // mount is clean; the unsynced file may or may not be there.
  if (ShutDown()) {
    RemountAfterShutdown();
  } else {
    Remount();
  }
  EXPECT_EQ(ReadFile(Path("before")), "x");
  EXPECT_EQ(WriteAndFsync("g", "after"), 0);
}

TEST_F(IoError, AFailedFlushFailsWalfsSyncAndItsControlFileWriteWithEio) {
  ASSERT_EQ(WriteAndFsync("before", "x"), 0);
  WriteFile(Path("f"), "not yet durable");
  Fault("flushes");
  const int fd = open(Ctl("sync").c_str(), O_WRONLY);
  ASSERT_SYS(fd);
  EXPECT_ERRNO(EIO, write(fd, "1", 1)) << "a sync whose flush failed must not succeed";
  close(fd);
  const ToolRun r = RunTool(BinDir() + "/walfs sync " + Root());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("the sync failed: Input/output error"), std::string::npos) << r.out;
  const std::string text = ReadFile(Ctl("sync"));
  EXPECT_EQ(StatIn(text, "failed"), 2) << text;
  EXPECT_NE(text.find("last_error "), std::string::npos) << text;
  Fault("clear");
  if (ShutDown()) {
    RemountAfterShutdown();
  } else {
    Remount();
  }
  EXPECT_EQ(ReadFile(Path("before")), "x");
}

TEST_F(IoError, AFailedDataWriteIsThatWritesEioAndTheFilesystemStaysUp) {
  ASSERT_EQ(WriteAndFsync("before", "x"), 0);
  Fault("write 1");
  const int fd = open(Path("f").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_SYS(fd);
  EXPECT_ERRNO(EIO, write(fd, "new data", 8)) << "the data block write is the first write";
  EXPECT_FALSE(ShutDown());
  EXPECT_EQ(write(fd, "new data", 8), 8) << "the next write works";
  EXPECT_SYS(fsync(fd));
  close(fd);
  EXPECT_EQ(ReadFile(Path("f")), "new data");
  Remount();  // fsck -n clean: the failed write's blocks went back
  EXPECT_EQ(ReadFile(Path("f")), "new data");
}

TEST_F(IoError, AFailedMetadataReadIsEioAndReadsWorkAgainAfterwards) {
  ASSERT_SYS(mkdir(Path("d").c_str(), 0755));
  for (int i = 0; i < 20; ++i) WriteFile(Path("d/f" + std::to_string(i)), "content " + std::to_string(i));
  Remount();  // an empty buffer cache: the next lookups read the image
  Fault("read 0 " + std::to_string(256u << 20));
  struct stat st {};
  EXPECT_ERRNO(EIO, stat(Path("d/f7").c_str(), &st));
  EXPECT_FALSE(ShutDown()) << "a failed read changes nothing on disk";
  Fault("clear");
  EXPECT_EQ(ReadFile(Path("d/f7")), "content 7");
  EXPECT_EQ(ListDir(Path("d")).size(), 20u);
  const std::string fault = ReadFile(Ctl("fault"));
  EXPECT_NE(fault.find("last: clear"), std::string::npos) << fault;
  EXPECT_EQ(fault.find("failed_reads: 0\n"), std::string::npos) << fault;
}

TEST_F(IoError, ATornLogWriteShutsDownAndRecoveryDropsTheTornRecord) {
  ASSERT_EQ(WriteAndFsync("kept", "synced"), 0);
  Fault("tear 1 1");  // the first write: the create's log record (no data)
  EXPECT_EQ(WriteAndFsync("torn", ""), EIO);
  EXPECT_TRUE(ShutDown());
  RemountAfterShutdown();
  EXPECT_EQ(ReadFile(Path("kept")), "synced");
}

TEST_F(IoError, BadFaultCommandsAreEinvalAndChangeNothing) {
  for (const std::string bad : {"explode", "write 0", "read 0 0", "write 1 EWHAT"}) {
    const int fd = open(Ctl("fault").c_str(), O_WRONLY);
    ASSERT_SYS(fd);
    EXPECT_ERRNO(EINVAL, write(fd, bad.data(), bad.size())) << bad;
    close(fd);
  }
  EXPECT_EQ(WriteAndFsync("still", "works"), 0);
}

// Without the option there is no fault file; `messages` is always there.
class Messages : public MountedFs {
 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
  }
};

TEST_F(Messages, TheMessagesFileSaysTheImageWasMountedAndThereIsNoFaultFile) {
  const std::string m = ReadFile(Root() + "/.walfs/messages");
  EXPECT_NE(m.find("walfs info: "), std::string::npos) << m;
  EXPECT_NE(m.find(": mounted; clean log"), std::string::npos) << m;
  struct stat st {};
  EXPECT_ERRNO(ENOENT, stat((Root() + "/.walfs/fault").c_str(), &st));
  EXPECT_ERRNO(EACCES, open((Root() + "/.walfs/messages").c_str(), O_WRONLY));
}

// The warning and error lines of the message log ("walfs warning: ...",
// "walfs error: ..."), without their timestamps.
std::string WarningsAndErrors(const std::string& messages) {
  std::string out;
  std::size_t at = 0;
  while (at < messages.size()) {
    std::size_t end = messages.find('\n', at);
    if (end == std::string::npos) end = messages.size();
    const std::string line = messages.substr(at, end - at);
    for (const char* tag : {"walfs warning: ", "walfs error: "}) {
      if (const std::size_t t = line.find(tag); t != std::string::npos) out += line.substr(t) + "\n";
    }
    at = end + 1;
  }
  return out;
}

// ENODATA is the answer to a question ("is there such an attribute?"), not
// a failure of the filesystem: the message log is for damage and I/O errors.
TEST_F(Messages, AGetxattrOfAMissingAttributeAddsNoWarningOrError) {
  const std::string file = Path("f");
  WriteFile(file, "data");
  const std::string before = WarningsAndErrors(ReadFile(Root() + "/.walfs/messages"));
  char buf[64];
  for (int i = 0; i < 3; ++i) {
    EXPECT_ERRNO(ENODATA, getxattr(file.c_str(), "user.missing", buf, sizeof(buf)));
    EXPECT_ERRNO(ENODATA, getxattr(file.c_str(), "user.missing", nullptr, 0)) << "the size query";
  }
  const std::string after = WarningsAndErrors(ReadFile(Root() + "/.walfs/messages"));
  EXPECT_EQ(after, before) << "a missing attribute was logged";
}

}  // namespace
}  // namespace walfs::testing
