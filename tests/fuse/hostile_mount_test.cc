// Hostile images through the real mount (docs/hostile_images.md): damaged
// images (tests/hostile/hostile_mutate.h) handed to the `walfs` daemon.
// Either the mount is refused with a message and a failure exit status, or
// it mounts, `ls -R` and reading every file finish (errors such as EIO or
// EUCLEAN are fine), and after the unmount the daemon exits by itself.
// Never a crash signal, a sanitizer report or a hang.
//
// Skips where FUSE cannot mount (no /dev/fuse, no fusermount3, not root).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fuse/mount_fixture.h"
#include "tests/hostile/hostile_image.h"
#include "tests/hostile/hostile_mutate.h"
#include "tests/tools/tool_run.h"

namespace walfs::testing {
namespace {

using hostile::BlockKind;
using hostile::Flavour;

bool SanitizerSpoke(const std::string& out) {
  return out.find("Sanitizer") != std::string::npos || out.find("runtime error:") != std::string::npos;
}

class HostileMount : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = FuseUnavailableReason(); !why.empty()) GTEST_SKIP() << why;
    if (geteuid() != 0) GTEST_SKIP() << "not root";
    ASSERT_EQ(mount_.Create("walfs-hostile"), "");
  }

  // A base image damaged in one block of `kind`: the first seed from 1 that
  // changes it.  Each flavour keeps one copy of its base to damage, and the
  // damaged block is copied back after each try (a fresh copy of the image
  // a try was most of the suite's time under TSan).
  void WriteDamaged(Flavour flavour, BlockKind kind, std::string* what) {
    static const hostile::BaseImage* bases[2] = {};
    static std::vector<std::byte>* scratch[2] = {};
    const hostile::BaseImage*& base = bases[static_cast<int>(flavour)];
    std::vector<std::byte>*& image = scratch[static_cast<int>(flavour)];
    if (base == nullptr) {
      auto b = hostile::BuildBaseImage(flavour);
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      base = new hostile::BaseImage(std::move(b).value());
      image = new std::vector<std::byte>(base->image);
    }
    for (std::uint64_t seed = 1;; ++seed) {
      const hostile::Mutation m = hostile::Mutate(*base, seed, *image, static_cast<int>(kind));
      bool written = false;
      if (m.changed) {
        *what = m.description;
        std::ofstream out(mount_.image(), std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(image->data()), static_cast<std::streamsize>(image->size()));
        written = static_cast<bool>(out);
      }
      std::copy_n(base->image.begin() + static_cast<std::ptrdiff_t>(m.offset), m.length,
                  image->begin() + static_cast<std::ptrdiff_t>(m.offset));
      if (!m.changed) continue;
      ASSERT_TRUE(written) << mount_.image();
      return;
    }
  }

  // Mounts, reads everything, unmounts; every outcome but a crash, a
  // sanitizer report or a hang is fine.
  void MountAndRead(const std::string& what) {
    SCOPED_TRACE(what);
    const std::string mount_error = mount_.Mount({});
    if (mount_.exit_status() != -1) {  // refused: the daemon exited
      const int status = mount_.exit_status();
      const std::string out = mount_.Output();
      ASSERT_TRUE(WIFEXITED(status)) << "walfs died of signal " << WTERMSIG(status) << "; output:\n" << out;
      EXPECT_NE(WEXITSTATUS(status), 0) << out;
      EXPECT_FALSE(SanitizerSpoke(out)) << out;
      // A refusal says why, in a line of its own.
      EXPECT_NE(out.find("walfs"), std::string::npos) << out;
      EXPECT_LE(std::count(out.begin(), out.end(), '\n'), 3) << out;
      std::printf("refused: %s", out.c_str());
      return;
    }
    if (!mount_error.empty()) mount_.Kill();
    ASSERT_EQ(mount_error, "") << "walfs neither mounted nor exited";
    const std::string& mnt = mount_.mountpoint();
    // Errors go to the output (the first line is printed), data nowhere.
    const ToolRun ls = RunTool("{ timeout -s KILL 60 ls -laR " + mnt + " 2>&1 >/dev/null; }");
    const ToolRun cat = RunTool("{ timeout -s KILL 60 find " + mnt + " -type f -exec cat {} + 2>&1 >/dev/null; }");
    const ToolRun xattrs = RunTool(
        "timeout -s KILL 60 python3 -c 'import os,sys\n"
        "bad = 0\n"
        "for d, dirs, files in os.walk(sys.argv[1]):\n"
        "  for p in [d] + [os.path.join(d, f) for f in files]:\n"
        "    try: [os.getxattr(p, n, follow_symlinks=False) for n in os.listxattr(p, follow_symlinks=False)]\n"
        "    except OSError as e: bad = 1; print(e)\n"
        "sys.exit(bad)' " + mnt);
    EXPECT_NE(ls.exit_code, 137) << "ls -R hung";
    EXPECT_NE(cat.exit_code, 137) << "cat hung";
    EXPECT_NE(xattrs.exit_code, 137) << "the xattr walk hung";
    auto first_line = [](const std::string& s) { return s.substr(0, s.find('\n')); };
    std::printf("mounted: ls %d (%s), cat %d (%s), xattrs %d (%s)\n", ls.exit_code, first_line(ls.out).c_str(),
                cat.exit_code, first_line(cat.out).c_str(), xattrs.exit_code, first_line(xattrs.out).c_str());
    // Any exit status (a damaged image may shut the filesystem down), but
    // by itself and not by a signal.
    const std::string unmounted = mount_.Unmount(WalfsMount::kAnyExit);
    ASSERT_TRUE(WIFEXITED(mount_.exit_status())) << unmounted;
    EXPECT_FALSE(SanitizerSpoke(mount_.Output())) << mount_.Output();
  }

  // Damaged images take longer to refuse or to unmount than clean ones.
  WalfsMount mount_{MountConfig{.image_size = "", .options = {}, .mount_timeout_s = 20}};
};

TEST_F(HostileMount, DamagedSuperblockIsRefusedWithAMessage) {
  std::string what;
  WriteDamaged(Flavour::kClean, BlockKind::kSuperblock, &what);
  MountAndRead(what);
}

TEST_F(HostileMount, DamagedTreesAndInodesMountOrRefuseAndTheDaemonExits) {
  for (BlockKind k : {BlockKind::kDirNode, BlockKind::kExtentNode, BlockKind::kXattrNode, BlockKind::kInodeChunk,
                      BlockKind::kAgHeader}) {
    std::string what;
    WriteDamaged(Flavour::kClean, k, &what);
    MountAndRead(what);
    if (HasFatalFailure()) return;
  }
}

TEST_F(HostileMount, DamagedLogOfACrashedImageMountsOrRefusesAndTheDaemonExits) {
  for (BlockKind k : {BlockKind::kLogRecord, BlockKind::kDirNode, BlockKind::kImap}) {
    std::string what;
    WriteDamaged(Flavour::kCrashed, k, &what);
    MountAndRead(what);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace walfs::testing
