// The mount program's options and arguments: what it refuses before it
// mounts, with a message that says the allowed range, and what a read-only
// mount looks like to the kernel.  Exit status: 2 for a usage error (one line
// ending in "see walfs --help"), 32 for a mount that fails (mount(8)'s
// "mount failure"), with the reason on one line.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>
#include <utility>

#include "base/mount_table.h"
#include "tests/fuse/mount_fixture.h"

namespace walfs::testing {
namespace {

std::string ProcMountsLine(const std::string& mountpoint) {
  std::ifstream f("/proc/mounts");
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string dev, mnt;
    in >> dev >> mnt;
    if (mnt == mountpoint) return line;
  }
  return "";
}

class MountOptions : public MountedFs {
 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
    char dir[] = "/tmp/walfs-options-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    if (!dir_.empty()) {
      if (!ProcMountsLine(dir_).empty()) (void)!system(("umount " + dir_).c_str());
      rmdir(dir_.c_str());
    }
    MountedFs::TearDown();
  }
  std::string Walfs() const { return BinDir() + "/walfs"; }
  // A fresh 64 MiB image beside dir_ (the suite's own is mounted, so locked).
  std::string MakeImage(const std::string& suffix = ".img") const {
    const std::string img = dir_ + suffix;
    const ToolRun mkfs = RunTool(BinDir() + "/mkfs.walfs -f " + img + " 64m");
    EXPECT_EQ(mkfs.exit_code, 0) << mkfs.out;
    return img;
  }
  std::string dir_;
};

constexpr int kUsageExit = 2;
constexpr int kMountFailedExit = 32;

std::size_t Lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST_F(MountOptions, NumbersOutsideTheirRangeAreRefusedWithTheRange) {
  for (const char* bad : {"threads=0", "threads=-3", "max_threads=0", "trace_buffer_kb=0", "logbsize=99999999",
                          "logbufs=1", "logbufs=x", "trace_delay_us=0", "wb_reserve_mb=-1", "zeroout_kb=1025",
                          "zeroout_kb=32k"}) {
    const ToolRun r = RunTool(Walfs() + " " + ImagePath() + " " + dir_ + " -f -o " + bad);
    EXPECT_EQ(r.exit_code, kUsageExit) << bad << ": " << r.out;
    const std::string name = std::string(bad).substr(0, std::string(bad).find('='));
    EXPECT_NE(r.out.find(std::string(bad) + ": must be a whole number from"), std::string::npos) << r.out;
    EXPECT_EQ(ProcMountsLine(dir_), "") << bad << " mounted";
  }
}

TEST_F(MountOptions, AChoiceOutsideItsValuesIsRefusedNamingThem) {
  for (const auto& [bad, says] : std::vector<std::pair<std::string, std::string>>{
           {"io=fast", "io=fast: must be io=sync or io=uring"},
           {"force_io=bogus", "force_io=bogus: must be force_io=inline or force_io=device"},
           {"force_io=inline,force_io=device", "choose one"}}) {
    const ToolRun r = RunTool(Walfs() + " " + ImagePath() + " " + dir_ + " -f -o " + bad);
    EXPECT_EQ(r.exit_code, kUsageExit) << bad << ": " << r.out;
    EXPECT_NE(r.out.find(says), std::string::npos) << bad << ": " << r.out;
    EXPECT_EQ(ProcMountsLine(dir_), "") << bad << " mounted";
  }
}

TEST_F(MountOptions, AnImageIsNotMountedOnItselfOrOverTheDirectoryHoldingIt) {
  const ToolRun self = RunTool(Walfs() + " " + ImagePath() + " " + ImagePath() + " -f");
  EXPECT_EQ(self.exit_code, kMountFailedExit) << self.out;
  EXPECT_NE(self.out.find("cannot be its own mountpoint"), std::string::npos) << self.out;
  const std::string dir = ImagePath().substr(0, ImagePath().rfind('/'));
  const ToolRun above = RunTool(Walfs() + " " + ImagePath() + " " + dir + " -f");
  EXPECT_EQ(above.exit_code, kMountFailedExit) << above.out;
  EXPECT_NE(above.out.find("would hide the image"), std::string::npos) << above.out;
}

TEST_F(MountOptions, ErrorsNameTheImageOnceWithoutStatusNames) {
  const ToolRun r = RunTool(Walfs() + " " + dir_ + "-missing.img " + dir_ + " -f");
  EXPECT_EQ(r.exit_code, kMountFailedExit) << r.out;
  EXPECT_EQ(r.out.find("NotFound"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("missing.img: open"), std::string::npos) << "the image named twice: " << r.out;
  EXPECT_NE(r.out.find("missing.img: No such file or directory"), std::string::npos) << r.out;
}

TEST_F(MountOptions, RemountSaysWhatToDoInstead) {
  const ToolRun r = RunTool(Walfs() + " " + ImagePath() + " " + dir_ + " -o rw,remount,ro");
  EXPECT_EQ(r.exit_code, kMountFailedExit) << r.out;
  EXPECT_NE(r.out.find("remount is not supported"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-o ro"), std::string::npos) << r.out;
}

// Every one of these was the whole --help and exit 1, "bad command line", or
// (an unknown option) a failure after the image had been opened and its log
// replayed, in two lines.
TEST_F(MountOptions, AUsageErrorIsOneLineOnStderrExit2AndMountsNothing) {
  const std::string img = MakeImage();
  struct Case {
    std::string args, says;
  };
  for (const Case& c : std::vector<Case>{
           {"", "IMAGE and MOUNTPOINT are required"},
           {img, "MOUNTPOINT is required"},
           {"--bogus", "--bogus"},  // named before the missing arguments
           {img + " " + dir_ + " --bogus", "--bogus"},
           {img + " " + dir_ + " -x", "-x"},
           {img + " " + dir_ + " -o no_such_option", "no_such_option"},
           {img + " " + dir_ + " " + dir_ + "-extra", dir_ + "-extra"},
           {img + " " + dir_ + " -o commit=5s", "commit=5s: must be a whole number"},
           {img + " " + dir_ + " -o io=fast", "io=fast: must be io=sync or io=uring"},
           {img + " " + dir_ + " -o wake=never", "wake=never"},
       }) {
    const ToolRun err = RunTool("{ " + Walfs() + " " + c.args + " 2>&1 >/dev/null; }");  // stderr only
    EXPECT_EQ(err.exit_code, kUsageExit) << "walfs " << c.args << ": " << err.out;
    EXPECT_EQ(Lines(err.out), 1u) << "walfs " << c.args << ": " << err.out;
    EXPECT_EQ(err.out.rfind("walfs: ", 0), 0u) << "walfs " << c.args << ": " << err.out;
    EXPECT_NE(err.out.find(c.says), std::string::npos) << "walfs " << c.args << ": " << err.out;
    EXPECT_NE(err.out.find("; see walfs --help\n"), std::string::npos) << "walfs " << c.args << ": " << err.out;
    EXPECT_EQ(RunTool("{ " + Walfs() + " " + c.args + " 2>/dev/null; }").out, "") << "walfs " << c.args;
    EXPECT_EQ(ProcMountsLine(dir_), "") << "walfs " << c.args << " mounted";
  }
  unlink(img.c_str());
}

// mount(8) and mount.fuse3 pass the helper's status on: 32 is "mount
// failure".  In the background the parent says why; in the foreground the
// daemon does.  The mount point is checked before the image is opened.
TEST_F(MountOptions, AMountThatFailsExits32WithTheReasonOnOneLine) {
  const std::string img = MakeImage();
  const std::string zeros = dir_ + "-zeros.img";
  ASSERT_EQ(RunTool("head -c 1048576 /dev/zero > " + zeros).exit_code, 0);
  const std::string file = dir_ + "-file";
  ASSERT_EQ(RunTool(": > " + file).exit_code, 0);
  struct Case {
    std::string image, mountpoint, says;
  };
  for (const Case& c : std::vector<Case>{
           {dir_ + "-missing.img", dir_, "missing.img: No such file or directory"},
           {zeros, dir_, "not a walfs image"},
           {ImagePath(), dir_, "is in use by pid"},  // the suite's own, mounted
           {img, dir_ + "-no-such-dir", "the mount point does not exist"},
           {img, file, "the mount point is not a directory"},
       }) {
    for (const char* mode : {"", " -f"}) {
      const std::string cmd = Walfs() + " " + c.image + " " + c.mountpoint + mode;
      const ToolRun err = RunTool("{ " + cmd + " 2>&1 >/dev/null; }");
      EXPECT_EQ(err.exit_code, kMountFailedExit) << cmd << ": " << err.out;
      EXPECT_NE(err.out.find(c.says), std::string::npos) << cmd << ": " << err.out;
      EXPECT_EQ(err.out.rfind("walfs: ", 0), 0u) << cmd << ": " << err.out;
      if (*mode == '\0') {
        EXPECT_EQ(Lines(err.out), 1u) << cmd << ": " << err.out;
      }
      EXPECT_EQ(ProcMountsLine(dir_), "") << cmd << " mounted";
    }
  }
  unlink(file.c_str());
  unlink(zeros.c_str());
  unlink(img.c_str());
}

// df, findmnt and umount know a mount by its source: the image's absolute
// path, whatever directory walfs ran in and however the image was named.
TEST_F(MountOptions, AnImageNamedRelativelyIsTheMountsSourceByItsAbsolutePath) {
  const std::string img = MakeImage();
  const std::string dir = img.substr(0, img.rfind('/'));
  const std::string name = img.substr(img.rfind('/') + 1);
  char* real = realpath(img.c_str(), nullptr);
  ASSERT_NE(real, nullptr);
  const std::string absolute = real;
  free(real);
  const ToolRun r = RunTool("cd " + dir + " && " + Walfs() + " ./" + name + " " + dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::optional<MountEntry> m = TopMountAt(dir_);
  ASSERT_TRUE(m.has_value()) << dir_ << " is not in /proc/self/mountinfo";
  EXPECT_EQ(m->fstype, "fuse.walfs");
  EXPECT_EQ(m->source, absolute);
  const ToolRun found = RunTool("findmnt -n -o TARGET --source " + absolute);
  EXPECT_EQ(found.out, dir_ + "\n") << "findmnt --source " << absolute << " exited " << found.exit_code;
  // umount by the image, as an administrator would.
  EXPECT_EQ(RunTool("umount " + absolute).exit_code, 0);
  EXPECT_EQ(ProcMountsLine(dir_), "");
  unlink(img.c_str());
}

// The second mount of the suite's image would be refused (it is locked), so
// these use an image of their own.
TEST_F(MountOptions, NorecoveryIsReadOnlyToTheKernelAndAMountPrintsNoLibfuseWarning) {
  const std::string img = dir_ + ".img";
  ASSERT_EQ(RunTool(BinDir() + "/mkfs.walfs " + img + " 64m").exit_code, 0);
  ToolRun r = RunTool(Walfs() + " " + img + " " + dir_ + " -o norecovery");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string line = ProcMountsLine(dir_);
  EXPECT_EQ(line.find(" rw,"), std::string::npos) << line;
  EXPECT_NE(line.find(" ro,"), std::string::npos) << line;
  EXPECT_ERRNO(EROFS, mkdir((dir_ + "/d").c_str(), 0755));
  ASSERT_EQ(system(("umount " + dir_).c_str()), 0);
  // In the foreground a mount's stderr holds walfs's lines only.
  r = RunTool("timeout -s INT 2 " + Walfs() + " " + img + " " + dir_ + " -f");
  EXPECT_EQ(r.out.find("Ignoring invalid max threads"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(img + ": " + img), std::string::npos) << "the image named twice: " << r.out;
  unlink(img.c_str());
}

// .walfs/mount_options: every option in effect, the defaults too, one
// name=value a line; the wake mode as it is now, the transport in use.
TEST_F(MountOptions, TheControlDirectorySaysEveryOptionInEffect) {
  const std::string img = MakeImage();
  const ToolRun r = RunTool(Walfs() + " " + img + " " + dir_ + " -o commit=7,wake=waking,nowriteback_cache,discard");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string text = ReadFile(dir_ + "/.walfs/mount_options");
  for (const std::string& line :
       {"image=" + img, std::string("ro=off"), std::string("commit=7"), std::string("wake=waking"),
        std::string("writeback_cache=off"), std::string("discard=on"), std::string("lazy_commit_ms=5"),
        std::string("wb_push_ms=10"), std::string("transport=auto"), std::string("killpriv_v2=on"),
        std::string("threads=default")})
    EXPECT_NE(("\n" + text).find("\n" + line + "\n"), std::string::npos) << line << " in:\n" << text;
  EXPECT_TRUE(text.find("\ntransport_in_use=dev\n") != std::string::npos ||
              text.find("\ntransport_in_use=uring\n") != std::string::npos)
      << text;
  EXPECT_NE(text.find("\nfilesystem=" + img + ": "), std::string::npos) << text;
  // Every line is name=value.
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) EXPECT_NE(line.find('='), std::string::npos) << line;
  PutControl(dir_, "options/grant_wake", "inline");
  EXPECT_NE(ReadFile(dir_ + "/.walfs/mount_options").find("\nwake=inline\n"), std::string::npos)
      << "the wake mode as it is now";
  ASSERT_EQ(system(("umount " + dir_).c_str()), 0);
  unlink(img.c_str());
}

}  // namespace
}  // namespace walfs::testing
