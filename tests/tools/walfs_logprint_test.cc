// walfs-logprint end to end, on raw log files written by the test.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <filesystem>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "fs/filesystem.h"
#include "tests/journal/log_test_fixture.h"
#include "tests/journal/log_test_util.h"
#include "tests/tools/tool_run.h"

namespace walfs::journal {
namespace {

using walfs::testing::ToolRun;

ToolRun LogPrint(const std::string& args) {
  return walfs::testing::RunTool(std::string(WALFS_LOGPRINT) + " " + args);
}

// Writes the test log's region out as a raw log file.
std::string SaveRaw(testing::TestLog& log, const std::string& name) {
  const std::string path = ::testing::TempDir() + name;
  std::string bytes = *log.region().ReadSectors(0, log.region().sectors);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string Tx(std::uint32_t tid, bool commit) {
  std::string p;
  AppendOp(&p, OpHeader{tid, 0, kOpStart, ItemType::kNone}, "");
  AppendOp(&p, OpHeader{tid, 300, 0, ItemType::kBuffer}, std::string(300, 'x'));
  if (commit) AppendOp(&p, OpHeader{tid, 0, kOpCommit, ItemType::kNone}, "");
  return p;
}

TEST(WalfsLogprint, PrintsHeadTailRecordsAndOps) {
  testing::TestLog log(128);
  log.Append(Tx(11, true));
  log.Append(Tx(12, true));
  log.Append(Tx(13, false));
  ToolRun r = LogPrint(SaveRaw(log, "plain.log"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("head 1:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lsn: 1:0"), std::string::npos);
  EXPECT_NE(r.out.find("flags START"), std::string::npos);
  EXPECT_NE(r.out.find("type buffer"), std::string::npos);
  EXPECT_NE(r.out.find("3 records, 2 committed transactions, 1 uncommitted"), std::string::npos)
      << r.out;
}

TEST(WalfsLogprint, TransactionalViewListsCommittedTransactions) {
  testing::TestLog log(128);
  log.Append(Tx(21, true));
  log.Append(Tx(22, false));
  ToolRun r = LogPrint("-t " + SaveRaw(log, "tx.log"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("transaction tid 21"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("transaction tid 22"), std::string::npos);
  EXPECT_NE(r.out.find("item   0: buffer (300 bytes)"), std::string::npos) << r.out;
}

TEST(WalfsLogprint, DecodesCheckpointsAndBufferItemsOfARealLog) {
  constexpr std::uint32_t kSectors = 4096;
  MemoryDevice dev(testing::ImageBytes(kSectors));
  {
    auto opened = Log::Open(testing::TestLogOptions(&dev, kSectors));
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    testing::TestJournal j(std::move(opened).value(), 4);
    auto tx = Transaction::Begin(j.get(), TransType::kSetattr);
    ASSERT_TRUE(tx.ok());
    testing::LockBlock(j[3]);
    testing::Fill(&*tx, j[3], 200, 300, 0x5a);  // chunks 1..3
    auto seq = tx->Commit();
    testing::UnlockBlock(j[3]);
    ASSERT_TRUE(seq.ok());
    ASSERT_TRUE(j->Close().ok());
  }
  const std::string path = ::testing::TempDir() + "real.log";
  std::string bytes(std::size_t{kSectors} * kLogSectorSize, '\0');
  ASSERT_TRUE(dev.Read(testing::kLogOffset, bytes.data(), bytes.size()).ok());
  std::ofstream(path, std::ios::binary) << bytes;
  ToolRun r = LogPrint("-t " + path);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("checkpoint seq 1  items 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("blkno 3  block 4096  3 chunks, 384 bytes"), std::string::npos) << r.out;
  ToolRun records = LogPrint(path);
  EXPECT_NE(records.out.find("UNMOUNT"), std::string::npos) << records.out;
}

// A real image, cleanly unmounted: its tail has passed every record but the
// unmount record, which is all the default view shows; -a shows the rest,
// each buffer item named by its block's kind and owner.
TEST(WalfsLogprint, AllShowsTheCheckpointedRecordsOfARealImageWithEachBlockNamed) {
  const std::string image = ::testing::TempDir() + "logprint_all.img";
  std::filesystem::remove(image);
  ToolRun made = walfs::testing::RunTool(std::string(WALFS_MKFS) + " -q " + image + " 64m");
  ASSERT_EQ(made.exit_code, 0) << made.out;
  std::uint64_t dir_ino = 0;
  {
    fs::MountOptions o;
    o.image = image;
    auto mounted = fs::Filesystem::Mount(o);
    ASSERT_TRUE(mounted.ok()) << mounted.status().ToString();
    auto dir = (*mounted)->Mkdir({}, (*mounted)->root(), "d", 0755);
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ino = dir->st_ino;
    // Several checkpoints, each forced: the tail moves past the earlier
    // ones as they are written back.
    for (int round = 0; round < 4; ++round) {
      for (int i = 0; i < 5; ++i)
        ASSERT_TRUE((*mounted)->Mknod({}, dir_ino, "f" + std::to_string(round) + "-" + std::to_string(i), S_IFREG | 0644, 0).ok());
      ASSERT_TRUE((*mounted)->Sync().ok());
    }
    ASSERT_TRUE((*mounted)->Unmount().ok());
  }
  ToolRun plain = LogPrint(image);
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  const auto records = [](const std::string& out, const std::string& tail) {
    const auto at = out.rfind(tail);
    if (at == std::string::npos) return -1;
    const auto line = out.rfind('\n', at);
    return std::stoi(out.substr(line == std::string::npos ? 0 : line + 1));
  };
  const int active = records(plain.out, " records, ");
  ToolRun all = LogPrint("-a " + image);
  ASSERT_EQ(all.exit_code, 0) << all.out;
  EXPECT_NE(all.out.find("[checkpointed: before the tail]"), std::string::npos) << all.out;
  EXPECT_GT(records(all.out, " records in the log region: "), active) << plain.out << all.out;
  // The directory's inode is named where its chunk block was logged, and
  // the AG metadata by its AG.
  bool inode_named = false;
  std::istringstream lines(all.out);
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find("  inodes ");
    if (at == std::string::npos) continue;
    std::string list = line.substr(at + 9);
    list = "," + list.substr(0, list.find(' ')) + ",";
    inode_named = inode_named || list.find("," + std::to_string(dir_ino) + ",") != std::string::npos;
  }
  EXPECT_TRUE(inode_named) << "inode " << dir_ino << " in no logged inode block:\n" << all.out;
  EXPECT_NE(all.out.find("ag-header of AG 0 (AG 0)"), std::string::npos) << all.out;
  EXPECT_EQ(LogPrint("-a -t " + image).exit_code, 2) << "-a and -t exclude each other";
  std::filesystem::remove(image);
}

TEST(WalfsLogprint, ACorruptRecordIsReportedAndContinueSkipsIt) {
  testing::TestLog log(128);
  log.Append(Tx(31, true));
  const Lsn bad = log.Append(Tx(32, true));
  for (std::uint32_t i = 33; i < 40; ++i) log.Append(Tx(i, true));  // push `bad` out of the window
  std::string sector = *log.region().ReadSectors(SectorOf(bad) + 1, 1);
  sector[200] = static_cast<char>(sector[200] ^ 1);
  ASSERT_TRUE(log.region().WriteSectors(SectorOf(bad) + 1, sector).ok());
  const std::string path = SaveRaw(log, "bad.log");
  ToolRun stop = LogPrint(path);
  EXPECT_EQ(stop.exit_code, 1) << stop.out;
  EXPECT_NE(stop.out.find("CRC"), std::string::npos) << stop.out;
  ToolRun go_on = LogPrint("-c " + path);
  EXPECT_EQ(go_on.exit_code, 1);
  EXPECT_NE(go_on.out.find("resuming at"), std::string::npos) << go_on.out;
  EXPECT_NE(go_on.out.find("8 records"), std::string::npos) << go_on.out;  // 9 written, 1 bad
}

TEST(WalfsLogprint, AMissingFileIsAUsageError) {
  ToolRun r = LogPrint("/nonexistent/walfs.log");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("No such file"), std::string::npos) << r.out;
}

// Random bytes, zeros and another filesystem's image are not a log: said
// plainly, exit 1, instead of a "head" found in the noise and exit 0.
TEST(WalfsLogprint, AFileThatIsNeitherAnImageNorALogIsRefused) {
  const std::string dir = ::testing::TempDir();
  std::string noise(1 << 20, '\0');
  std::uint32_t x = 12345;
  for (char& c : noise) c = static_cast<char>((x = x * 1103515245 + 12345) >> 24);
  std::ofstream(dir + "noise.bin", std::ios::binary) << noise;
  std::ofstream(dir + "zeros.bin", std::ios::binary) << std::string(1 << 20, '\0');
  for (const char* name : {"noise.bin", "zeros.bin"}) {
    ToolRun r = LogPrint(dir + name);
    EXPECT_EQ(r.exit_code, 1) << name << ": " << r.out;
    EXPECT_NE(r.out.find("neither a walfs image nor a walfs log"), std::string::npos) << name << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << name << ": " << r.out;
    ToolRun region = LogPrint("--offset 4096 --sectors 64 " + dir + name);
    EXPECT_EQ(region.exit_code, 1) << name << ": " << region.out;
    EXPECT_NE(region.out.find("in the region given"), std::string::npos) << name << ": " << region.out;
  }
  if (walfs::testing::RunTool("command -v mkfs.ext4").exit_code == 0) {
    const std::string ext4 = dir + "ext4.img";
    ASSERT_EQ(walfs::testing::RunTool("rm -f " + ext4 + " && truncate -s 16m " + ext4 +
                                      " && mkfs.ext4 -q -F " + ext4).exit_code, 0);
    ToolRun r = LogPrint(ext4);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find("neither a walfs image nor a walfs log"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace walfs::journal
