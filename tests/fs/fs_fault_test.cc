// I/O errors under the mounted filesystem (base/block_device_fault.h
// between it and the image).  What must hold whatever fails:
//  - a failed log or metadata write shuts the filesystem down: later changes
//    get an error, Unmount reports the shutdown and returns, and the image,
//    with the faults gone, mounts (recovery) and passes fsck;
//  - everything fsynced before the fault is intact after that mount;
//  - a failed file-data write is the writer's error only.
// FsFaultCampaign runs seeded random workloads with one random fault each
// (a write, a run of writes, a torn write, a flush, or reads of a range) and
// checks all of that; WALFS_FS_FAULT_SEEDS=N runs N seeds (default 40; 16
// under ASan, 8 under TSan: tests/sanitizer_build.h).
#include <fcntl.h>

#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/block_device_fault.h"
#include "base/block_device_memory.h"
#include "base/block_device_recording.h"
#include "base/messages.h"
#include "fs/filesystem.h"
#include "fs/fsck.h"
#include "fs/mkfs.h"
#include "tests/sanitizer_build.h"

namespace walfs::fs {
namespace {

constexpr std::uint64_t kImageBytes = 32ull << 20;
constexpr Caller kRoot{};

std::string Problems(const FsckReport& r) {
  std::string out;
  for (const auto& p : r.problems) out += p.message + "\n";
  return out;
}

class FaultFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    Messages::Get().SetSink(Messages::Sink::kNone);  // the campaign's shutdowns are expected
    ASSERT_TRUE(MakeFilesystem(&disk_, {.ag_count = 2}).ok());
  }
  void TearDown() override { Messages::Get().SetSink(Messages::Sink::kStderr, Severity::kWarning); }

  std::unique_ptr<Filesystem> MountFaulty() {
    auto fs = Filesystem::MountDevice(&dev_, {});
    EXPECT_TRUE(fs.ok()) << fs.status().ToString();
    return fs.ok() ? std::move(fs).value() : nullptr;
  }
  // The image with the faults gone: recovery, then fsck clean after a clean
  // unmount; returns the mounted filesystem for the caller's checks.
  std::unique_ptr<Filesystem> MountRecovered() {
    dev_.ClearFaults();
    auto fs = Filesystem::MountDevice(&disk_, {});
    EXPECT_TRUE(fs.ok()) << "recovery after the fault: " << fs.status().ToString();
    return fs.ok() ? std::move(fs).value() : nullptr;
  }
  void ExpectCleanFsck() {
    auto r = CheckImage(&disk_, {.replay = false, .repair = false});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->problems.empty()) << Problems(*r);
  }
  std::uint64_t CreateWith(Filesystem* fs, const std::string& name, const std::string& data) {
    auto st = fs->Mknod(kRoot, fs->root(), name, S_IFREG | 0644, 0);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    if (!st.ok()) return 0;
    if (!data.empty()) {
      EXPECT_TRUE(fs->Write(st->st_ino, 0, data.data(), data.size()).ok());
    }
    EXPECT_TRUE(fs->Fsync(st->st_ino, false).ok());
    return st->st_ino;
  }
  // The image with the faults gone mounts (recovery), file `ino` holds
  // `data`, and after a clean unmount fsck finds nothing.
  void ExpectRecoveredWith(std::uint64_t ino, const std::string& data) {
    auto fs = MountRecovered();
    ASSERT_NE(fs, nullptr);
    EXPECT_EQ(ReadAll(fs.get(), ino, data.size() + 1), data);
    ASSERT_TRUE(fs->Unmount().ok());
    ExpectCleanFsck();
  }
  std::string ReadAll(Filesystem* fs, std::uint64_t ino, std::size_t size) {
    std::string out(size + 1, '\0');
    auto n = fs->Read(ino, 0, out.size(), out.data());
    if (!n.ok()) return "<" + n.status().ToString() + ">";
    out.resize(*n);
    return out;
  }

  MemoryDevice disk_{kImageBytes};
  FaultDevice dev_{&disk_};
};

TEST_F(FaultFixture, UnmountAfterALogWriteFailureReportsTheShutdownAndTheImageRecovers) {
  auto fs = MountFaulty();
  ASSERT_NE(fs, nullptr);
  const std::uint64_t kept = CreateWith(fs.get(), "kept", "synced data");
  dev_.FailWritesFrom(1);
  auto st = fs->Mknod(kRoot, fs->root(), "lost", S_IFREG | 0644, 0);
  ASSERT_TRUE(st.ok());
  EXPECT_FALSE(fs->Fsync(st->st_ino, false).ok());
  EXPECT_FALSE(fs->Mkdir(kRoot, fs->root(), "d", 0755).ok()) << "changes after the shutdown fail";
  const Status um = fs->Unmount();
  EXPECT_EQ(um.code(), StatusCode::kShutdown) << um.ToString();
  fs.reset();
  ExpectRecoveredWith(kept, "synced data");
}

TEST_F(FaultFixture, UnmountAfterADataWriteAndThenALogWriteFailedReturns) {
  auto fs = MountFaulty();
  ASSERT_NE(fs, nullptr);
  const std::uint64_t kept = CreateWith(fs.get(), "kept", "synced data");
  dev_.FailWritesFrom(1);
  auto st = fs->Mknod(kRoot, fs->root(), "lost", S_IFREG | 0644, 0);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(fs->Write(st->st_ino, 0, "abc", 3).status().ToErrno(), EIO);
  EXPECT_FALSE(fs->Fsync(st->st_ino, false).ok());
  const Status um = fs->Unmount();
  EXPECT_EQ(um.code(), StatusCode::kShutdown) << um.ToString();
  fs.reset();
  ExpectRecoveredWith(kept, "synced data");
}

// Found through the mount: the failure came while Unmount was closing the
// log, which left items pinned when the components were destroyed (abort).
TEST_F(FaultFixture, AWriteFailureWhileUnmountClosesTheLogIsReportedNotACrash) {
  auto fs = MountFaulty();
  ASSERT_NE(fs, nullptr);
  const std::uint64_t kept = CreateWith(fs.get(), "kept", "synced data");
  ASSERT_TRUE(fs->Mkdir(kRoot, fs->root(), "d", 0755).ok());
  dev_.FailWritesFrom(1);
  const Status um = fs->Unmount();
  EXPECT_FALSE(um.ok());
  EXPECT_EQ(um.ToErrno(), EIO) << um.ToString();
  fs.reset();
  ExpectRecoveredWith(kept, "synced data");
}

// A failed fsync leaves the data to be flushed by the next one: Fsync used
// to clear the inode's data-dirty mark before its force and flush, so a
// retry after a failed flush found nothing to flush and returned OK with
// the data possibly still in the device's volatile cache.  The retry's
// flush is what this checks (counted on the device); then a crash in the
// harshest state the recording's model allows (base/block_device_recording.h:
// only what a successful flush made durable landed) keeps the data.
TEST_F(FaultFixture, AnFsyncAfterAFailedFsyncFlushesAgainAndItsDataSurvivesACrash) {
  auto rec = RecordingDevice::Create(&disk_);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  FaultDevice dev(rec->get());
  auto fs = Filesystem::MountDevice(&dev, {});
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  const std::uint64_t ino = CreateWith(fs->get(), "f", "");
  const std::string data(3 * 4096 + 100, 'd');
  ASSERT_TRUE((*fs)->Write(ino, 0, data.data(), data.size()).ok());
  // The log is forced now: the fsync's only flush is the one for the data.
  ASSERT_TRUE((*fs)->log()->Force().ok());
  dev.FailNthFlush(1);
  EXPECT_EQ((*fs)->Fsync(ino, false).ToErrno(), EIO);
  ASSERT_EQ(dev.counters().failed_flushes, 1u);
  ASSERT_FALSE((*fs)->log()->IsShutdown()) << "a failed data flush is the caller's error only";
  dev.ClearFaults();
  const std::uint64_t flushes = dev.counters().flushes;
  ASSERT_TRUE((*fs)->Fsync(ino, false).ok());
  EXPECT_GT(dev.counters().flushes, flushes) << "the retry did not flush the data again";
  const std::size_t crash_at = (*rec)->op_count();
  fs->reset();  // a crash
  auto img = (*rec)->SampleCrashState(crash_at, {.seed = 1, .land_probability = 0.0});
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  auto after = Filesystem::MountDevice(img->get(), {});
  ASSERT_TRUE(after.ok()) << "recovery: " << after.status().ToString();
  EXPECT_EQ(ReadAll(after->get(), ino, data.size()), data);
  ASSERT_TRUE((*after)->Unmount().ok());
}


// ---------------------------------------------------------------- campaign

enum class FaultKind { kWrite, kWrites, kTear, kFlush, kFlushes, kReads };
constexpr const char* kFaultNames[] = {"write", "writes", "tear", "flush", "flushes", "reads"};

struct CampaignResult {
  FaultKind kind;
  std::string fault;    // the rule, as /.walfs/fault would take it
  bool fired = false;   // some request failed
  bool shut_down = false;
  std::size_t ledger = 0;  // fsynced files checked after recovery
  std::size_t op_errors = 0;
};

class Campaign {
 public:
  Campaign(std::uint64_t seed, MemoryDevice* disk, FaultDevice* dev) : rng_(seed), disk_(disk), dev_(dev) {}

  CampaignResult Run() {
    CampaignResult r;
    r.kind = static_cast<FaultKind>(Uniform(0, 5));
    // Warm up without faults: a tree with data, xattrs and fsynced files.
    {
      auto fs = Filesystem::MountDevice(dev_, {});
      if (!fs.ok()) return Fail(r, "mount: " + fs.status().ToString());
      fs_ = fs->get();
      for (int i = 0; i < 40 && failure_.empty(); ++i) Step(/*faults=*/false, &r);
      fs_ = nullptr;
      if (r.kind == FaultKind::kReads) {
        // A fresh mount: the cache is empty and lookups read the image.
        if (Status s = (*fs)->Unmount(); !s.ok()) return Fail(r, "clean unmount: " + s.ToString());
        fs->reset();
        fs = Filesystem::MountDevice(dev_, {});
        if (!fs.ok()) return Fail(r, "remount: " + fs.status().ToString());
      }
      if (!failure_.empty()) return Fail(r, failure_);
      Arm(&r);
      fs_ = fs->get();
      for (int i = 0; i < 120; ++i) Step(/*faults=*/true, &r);
      fs_ = nullptr;
      r.shut_down = (*fs)->log()->IsShutdown();
      const Status um = (*fs)->Unmount();
      if (!failure_.empty()) return Fail(r, failure_);
      if (r.shut_down && um.ok()) return Fail(r, "Unmount of a shut-down filesystem returned OK");
    }
    const FaultCounters c = dev_->counters();
    r.fired = c.failed_reads + c.failed_writes + c.failed_flushes > 0;
    dev_->ClearFaults();
    // The image with the faults gone: recovery, every fsynced file intact.
    auto fs = Filesystem::MountDevice(disk_, {});
    if (!fs.ok()) return Fail(r, "mount after the fault (recovery): " + fs.status().ToString());
    for (const auto& [name, want] : ledger_) {
      auto st = (*fs)->Lookup((*fs)->root(), name);
      if (!st.ok()) return Fail(r, fmt::format("fsynced file {} is gone: {}", name, st.status().ToString()));
      std::string got(want.size() + 1, '\0');
      auto n = (*fs)->Read(st->st_ino, 0, got.size(), got.data());
      if (!n.ok()) return Fail(r, fmt::format("reading fsynced file {}: {}", name, n.status().ToString()));
      got.resize(*n);
      if (got != want)
        return Fail(r, fmt::format("fsynced file {} has {} bytes, {} fsynced, or other bytes", name, got.size(),
                                   want.size()));
    }
    r.ledger = ledger_.size();
    if (Status s = (*fs)->Unmount(); !s.ok()) return Fail(r, "unmount after recovery: " + s.ToString());
    fs->reset();
    auto report = CheckImage(disk_, {.replay = false, .repair = false});
    if (!report.ok()) return Fail(r, "fsck: " + report.status().ToString());
    if (!report->problems.empty()) return Fail(r, "fsck: " + Problems(*report));
    return r;
  }

  const std::string& failure() const { return failure_; }

 private:
  CampaignResult Fail(CampaignResult r, std::string why) {
    if (failure_.empty()) failure_ = std::move(why);
    return r;
  }
  std::uint64_t Uniform(std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng_);
  }
  std::string Bytes(std::size_t n) {
    std::string s(n, '\0');
    for (auto& ch : s) ch = static_cast<char>('a' + Uniform(0, 25));
    return s;
  }

  void Arm(CampaignResult* r) {
    switch (r->kind) {
      case FaultKind::kWrite: {
        const auto n = Uniform(1, 30);
        dev_->FailNthWrite(n);
        r->fault = fmt::format("write {}", n);
        break;
      }
      case FaultKind::kWrites: {
        const auto n = Uniform(1, 60);
        dev_->FailWritesFrom(n);
        r->fault = fmt::format("writes {}", n);
        break;
      }
      case FaultKind::kTear: {
        const auto n = Uniform(1, 30), sectors = Uniform(0, 7);
        dev_->TearNthWrite(n, sectors);
        r->fault = fmt::format("tear {} {}", n, sectors);
        break;
      }
      case FaultKind::kFlush: {
        const auto n = Uniform(1, 10);
        dev_->FailNthFlush(n);
        r->fault = fmt::format("flush {}", n);
        break;
      }
      case FaultKind::kFlushes:
        dev_->FailFlushes();
        r->fault = "flushes";
        break;
      case FaultKind::kReads: {
        // A quarter of the image: metadata and data both live somewhere.
        const std::uint64_t len = disk_->size_bytes() / 4;
        const std::uint64_t off = Uniform(0, 3) * len;
        dev_->FailReads(off, len);
        r->fault = fmt::format("read {} {}", off, len);
        break;
      }
    }
  }

  // One random operation.  Without faults every call must succeed; with
  // them any may fail (the rule decides), and only fsynced write-once files
  // enter the ledger.
  void Step(bool faults, CampaignResult* r) {
    auto check = [&](const Status& s, const char* what) {
      if (s.ok()) return true;
      if (faults) {
        ++r->op_errors;
      } else if (failure_.empty()) {
        failure_ = fmt::format("{} failed without a fault: {}", what, s.ToString());
      }
      return false;
    };
    const std::uint64_t root = fs_->root();
    switch (Uniform(0, 10)) {
      case 0:
      case 1: {  // a write-once file, fsynced: the ledger
        const std::string name = fmt::format("f{}", next_++);
        const std::string data = Bytes(Uniform(0, 3) == 0 ? 0 : Uniform(1, 40000));
        auto st = fs_->Mknod(kRoot, root, name, S_IFREG | 0644, 0);
        if (!check(st.status(), "create")) return;
        if (!data.empty() && !check(fs_->Write(st->st_ino, 0, data.data(), data.size()).status(), "write")) return;
        if (!check(fs_->Fsync(st->st_ino, false), "fsync")) return;
        ledger_[name] = data;
        return;
      }
      case 2:
      case 3: {  // churn: a new file with data and an xattr
        const std::string name = fmt::format("c{}", Uniform(0, 15));
        auto st = fs_->Mknod(kRoot, root, name, S_IFREG | 0644, 0);
        if (!st.ok() && st.status().ToErrno() == EEXIST) return;
        if (!check(st.status(), "create churn")) return;
        const std::string data = Bytes(Uniform(1, 20000));
        if (!check(fs_->Write(st->st_ino, Uniform(0, 8192), data.data(), data.size()).status(), "write churn")) return;
        check(fs_->SetXattr(st->st_ino, "user.k", Bytes(Uniform(1, 300)), 0), "setxattr");
        return;
      }
      case 4: {  // rename over another churn file
        const auto a = fmt::format("c{}", Uniform(0, 15)), b = fmt::format("c{}", Uniform(0, 15));
        const Status s = fs_->Rename(root, a, root, b, 0);
        if (s.ToErrno() == ENOENT) return;
        check(s, "rename");
        return;
      }
      case 5: {
        const Status s = fs_->Unlink(root, fmt::format("c{}", Uniform(0, 15)));
        if (s.ToErrno() == ENOENT) return;
        check(s, "unlink");
        return;
      }
      case 6: {  // a directory with a few entries, or its removal
        const auto d = fmt::format("d{}", Uniform(0, 3));
        auto st = fs_->Mkdir(kRoot, root, d, 0755);
        if (!st.ok() && st.status().ToErrno() == EEXIST) {
          auto dst = fs_->Lookup(root, d);
          if (!check(dst.status(), "lookup dir")) return;
          for (int i = 0; i < 4; ++i) {
            const Status u = fs_->Unlink(dst->st_ino, fmt::format("e{}", i));
            if (u.ToErrno() != ENOENT && !check(u, "unlink in dir")) return;
          }
          const Status rm = fs_->Rmdir(root, d);
          if (rm.ToErrno() == ENOTEMPTY) return;
          check(rm, "rmdir");
          return;
        }
        if (!check(st.status(), "mkdir")) return;
        for (int i = 0; i < 4; ++i)
          if (!check(fs_->Mknod(kRoot, st->st_ino, fmt::format("e{}", i), S_IFREG | 0600, 0).status(), "create in dir"))
            return;
        return;
      }
      case 7: {  // truncate a churn file
        auto st = fs_->Lookup(root, fmt::format("c{}", Uniform(0, 15)));
        if (!st.ok() && st.status().ToErrno() == ENOENT) return;
        if (!check(st.status(), "lookup churn")) return;
        struct stat attr {};
        attr.st_size = static_cast<off_t>(Uniform(0, 30000));
        check(fs_->SetAttr(st->st_ino, attr, kSetSize).status(), "truncate");
        return;
      }
      case 8: {  // read back a ledger file: an error with faults, never other bytes
        if (ledger_.empty()) return;
        auto it = ledger_.begin();
        std::advance(it, static_cast<long>(Uniform(0, ledger_.size() - 1)));
        auto st = fs_->Lookup(root, it->first);
        if (!check(st.status(), "lookup fsynced")) return;
        std::string got(it->second.size() + 1, '\0');
        auto n = fs_->Read(st->st_ino, 0, got.size(), got.data());
        if (!check(n.status(), "read fsynced")) return;
        got.resize(*n);
        if (got != it->second && failure_.empty())
          failure_ = fmt::format("reading {} returned other bytes than were written", it->first);
        return;
      }
      default: {  // fsync a churn file
        auto st = fs_->Lookup(root, fmt::format("c{}", Uniform(0, 15)));
        if (!st.ok() && st.status().ToErrno() == ENOENT) return;
        if (!check(st.status(), "lookup churn")) return;
        check(fs_->Fsync(st->st_ino, Uniform(0, 1) == 1), "fsync churn");
        return;
      }
    }
  }

  std::mt19937_64 rng_;
  MemoryDevice* disk_;
  FaultDevice* dev_;
  Filesystem* fs_ = nullptr;
  std::map<std::string, std::string> ledger_;
  int next_ = 0;
  std::string failure_;
};

std::uint64_t CampaignSeeds() {
  const char* env = std::getenv("WALFS_FS_FAULT_SEEDS");
  if (env != nullptr && std::atoi(env) > 0) return static_cast<std::uint64_t>(std::atoi(env));
  return static_cast<std::uint64_t>(walfs::testing::ForBuild({.full = 40, .address = 16, .thread = 8}));
}

TEST(FsFaultCampaign, EveryInjectedFaultLeavesARecoverableImageWithFsyncedFilesIntact) {
  Messages::Get().SetSink(Messages::Sink::kNone);
  std::map<std::string, int> fired, shut;
  std::size_t ledger = 0, errors = 0;
  const std::uint64_t seeds = CampaignSeeds();
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    MemoryDevice disk(kImageBytes);
    ASSERT_TRUE(MakeFilesystem(&disk, {.ag_count = 2}).ok());
    FaultDevice dev(&disk);
    Campaign c(seed, &disk, &dev);
    const CampaignResult r = c.Run();
    ASSERT_EQ(c.failure(), "") << "seed " << seed << ", fault '" << r.fault
                               << "' (rerun: WALFS_FS_FAULT_SEEDS=" << seed << ")";
    const std::string kind = kFaultNames[static_cast<int>(r.kind)];
    fired[kind] += r.fired ? 1 : 0;
    shut[kind] += r.shut_down ? 1 : 0;
    ledger += r.ledger;
    errors += r.op_errors;
  }
  Messages::Get().SetSink(Messages::Sink::kStderr, Severity::kWarning);
  std::string summary;
  for (const auto& [kind, n] : fired) summary += fmt::format(" {}: {} fired/{} shut down;", kind, n, shut[kind]);
  std::printf("fault campaign: %llu seeds;%s %zu failed calls; %zu fsynced files checked after recovery\n",
              static_cast<unsigned long long>(seeds), summary.c_str(), errors, ledger);
}

}  // namespace
}  // namespace walfs::fs
