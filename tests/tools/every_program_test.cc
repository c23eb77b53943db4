// What every walfs program does alike on its command line (tools/cli.h,
// STYLE.md rule 24): -V/--version prints the walfs version and the on-disk
// format versions (exit 0), and a bad option is a usage error -- exit 2
// (fsck.walfs: 16, fsck(8)'s) with one line on stderr saying where to look,
// never an uncaught exception.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/version.h"
#include "tests/tools/tool_run.h"
#include "tools/cli.h"

namespace walfs {
namespace {

using testing::RunTool;
using testing::ToolRun;

struct Program {
  std::string name;
  int usage_exit;
};

const std::vector<Program>& Programs() {
  static const std::vector<Program> all{
      {"mkfs.walfs", 2},     {"fsck.walfs", 16},       {"walfs", 2},
      {"walfs-admin", 2},    {"walfs-growfs", 2},
      {"walfs-logprint", 2}, {"walfs-trace", 2},       {"walfs-aim", 2},
      {"walfs-crashtest", 2},
      {"log_bench", 2},      {"grant_head_bench", 2}, {"trace_bench", 2},
      {"walfs-peers", 2},    {"walfs-requests", 2},    {"walfs-churn", 2},
  };
#ifndef WALFS_NO_HARNESS_PROGRAMS
  static const std::vector<Program> with_harnesses = [] {
    std::vector<Program> v = all;
    v.push_back({"walfs-hostile", 2});
    v.push_back({"walfs-killtest", 2});
    return v;
  }();
  return with_harnesses;
#else
  return all;
#endif
}

std::string Bin(const std::string& name) { return std::string(WALFS_BIN_DIR) + "/" + name; }

TEST(EveryProgram, PrintsTheWalfsAndFormatVersions) {
  for (const Program& p : Programs()) {
    for (const char* flag : {"--version", "-V"}) {  // -V as mkfs.xfs, e2fsck and mount.fuse3
      ToolRun r = RunTool(Bin(p.name) + " " + flag);
      EXPECT_EQ(r.exit_code, 0) << p.name << " " << flag << ": " << r.out;
      EXPECT_EQ(r.out.rfind(cli::VersionText(p.name), 0), 0u) << p.name << " " << flag << ": " << r.out;
      EXPECT_NE(r.out.find(std::string("(walfs ") + std::string(kWalfsVersion) + ")"), std::string::npos)
          << p.name << " " << flag << ": " << r.out;
    }
  }
}

TEST(EveryProgram, ABadOptionIsOneLineOnStderrAndTheUsageExitCode) {
  for (const Program& p : Programs()) {
    for (const char* args : {"--no-such-option", "--no-such-option=1 x y"}) {
      ToolRun err = RunTool("{ " + Bin(p.name) + " " + std::string(args) + " 2>&1 >/dev/null; }");  // stderr only
      EXPECT_EQ(err.exit_code, p.usage_exit) << p.name << " " << args << ": " << err.out;
      EXPECT_EQ(std::count(err.out.begin(), err.out.end(), '\n'), 1) << p.name << " " << args << ": " << err.out;
      EXPECT_NE(err.out.find("see " + p.name + " --help"), std::string::npos) << p.name << ": " << err.out;
      ToolRun out = RunTool("{ " + Bin(p.name) + " " + args + " 2>/dev/null; }");  // stdout only
      EXPECT_EQ(out.out, "") << p.name << " " << args << ": a usage error printed on stdout";
    }
  }
}

// A file that cannot be read is one plain line: the program, the path and
// strerror's words (as cat and trace-cmd say), no status code name or errno
// number.
TEST(EveryProgram, AMissingTraceFileIsOnePlainLine) {
  for (const char* command : {"print", "stats", "list"}) {
    ToolRun r = RunTool("{ " + Bin("walfs-trace") + " " + command + " /nonexistent/t.wtrace 2>&1 >/dev/null; }");
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_EQ(r.out, "walfs-trace: /nonexistent/t.wtrace: No such file or directory\n") << command;
  }
  ToolRun r = RunTool("{ " + Bin("walfs-trace") + " print /etc/passwd 2>&1 >/dev/null; }");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "walfs-trace: /etc/passwd: not a walfs trace file (bad magic)\n");
}

// The cases issue 17 found, each once an uncaught exception, a wrong exit
// code or a message that sent the user the wrong way.
TEST(EveryProgram, BadValuesAreUsageErrorsNamingTheOption) {
  struct Case {
    std::string command, says;
    int exit_code;
  };
  const std::vector<Case> cases{
#ifndef WALFS_NO_HARNESS_PROGRAMS
      {"walfs-hostile --seeds x", "--seeds: must be a whole number of at least 1", 2},
      {"walfs-killtest --rounds 0", "--rounds", 2},
#endif
      {"walfs-crashtest --seeds 0", "--seeds: must be a whole number of at least 1, not '0'", 2},
      {"log_bench --threads 0", "--threads: must be a whole number of at least 1", 2},
      {"log_bench --engines nope", "--engines", 2},
      {"trace_bench --tables foo", "--tables: foo not in", 2},
      {"walfs-trace bogus", "unknown command 'bogus'", 2},
      {"grant_head_bench --modes nope", "--modes", 2},
      {"mkfs.walfs -a 0 img 64m", "--agcount", 2},
      {"fsck.walfs -n -y img", "--no-change excludes --yes", 16},
      {"walfs-admin -U nope img", "is not a UUID", 2},
      {"walfs-admin img", "nothing to do", 2},
      {"walfs-growfs", "MNT is required", 2},
      // An unknown option is named before a missing argument is.
      {"walfs-growfs --bogus", "not expected: --bogus", 2},
      {"fsck.walfs -x", "not expected: -x", 16},
      {"walfs-admin --bogus=1", "not expected: --bogus=1", 2},
      {"walfs-aim --bogus", "not expected: --bogus", 2},
      // ... under a subcommand too, whose required --output is missing.
      {"walfs-trace record --mount /mnt --bogus", "not expected: --bogus", 2},
      {"walfs-trace record --mount /mnt", "--output is required", 2},
      {"walfs-growfs /mnt 10x", "unknown unit", 2},
      {"walfs-growfs /mnt 0", "SIZE must be above 0", 2},
      // The mount program (tests/fuse/mount_options_test.cc has the rest).
      {"walfs", "IMAGE and MOUNTPOINT are required", 2},
      {"walfs img", "MOUNTPOINT is required", 2},
      {"walfs --bogus img", "--bogus", 2},
      {"walfs img mnt -o logbufs=1", "logbufs=1: must be a whole number from 2 to 16", 2},
  };
  for (const Case& c : cases) {
    ToolRun r = RunTool("{ " + Bin(c.command) + " 2>&1 >/dev/null; }");
    EXPECT_EQ(r.exit_code, c.exit_code) << c.command << ": " << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.command << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << c.command << ": " << r.out;
  }
}

}  // namespace
}  // namespace walfs
