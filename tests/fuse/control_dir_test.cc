// The reserved control directory MNT/.walfs: users cannot create, remove or
// rename onto or away from it, and its files report statistics and traces.
//
// Refusals: the kernel gives EEXIST before asking the filesystem when a name
// exists (mkdir, O_EXCL, link onto it), EISDIR for unlink of a directory or a
// rename of a file over one, and walfs may refuse the rest with EPERM or
// EACCES; any of {EPERM, EEXIST, EACCES} counts as refused.  What matters is
// that the call fails and .walfs is still there afterwards.
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "tests/fuse/mount_fixture.h"
#include "tests/sanitizer_build.h"

namespace walfs::testing {
namespace {

// Lines of trace output that are not "# ..." headers.
size_t EventLines(const std::string& text) {
  size_t n = 0, start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start && text[start] != '#') ++n;
    start = end + 1;
  }
  return n;
}

class ControlDir : public MountedFs {
 protected:
  void SetUp() override {
    MountedFs::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WALFS_REQUIRE_WALFS();
    ctl_ = Root() + "/.walfs";
  }
  void ExpectRefused(const char* what, long r) {
    const int e = errno;
    EXPECT_EQ(r, -1) << what << " succeeded";
    EXPECT_TRUE(e == EPERM || e == EEXIST || e == EACCES)
        << what << " failed with " << strerrorname_np(e) << ", not EPERM/EEXIST/EACCES";
  }
  void ExpectStillThere() {
    struct stat st {};
    ASSERT_SYS(stat(ctl_.c_str(), &st));
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_SYS(access((ctl_ + "/stats").c_str(), R_OK));
  }
  // Writes `value` to a control file.
  void Put(const std::string& rel, const std::string& value) { PutControl(Root(), rel, value); }
  void Activity(int n) {
    for (int i = 0; i < n; ++i) {
      const std::string p = Path("act" + std::to_string(i));
      WriteFile(p, "activity");
      struct stat st {};
      stat(p.c_str(), &st);
      unlink(p.c_str());
    }
  }
  std::string ctl_;
};

TEST_F(ControlDir, ExistsAtTheRootAsADirectory) {
  ExpectStillThere();
  for (const char* f : {"stats", "trace", "trace_pipe", "tracing_on", "events", "options"}) {
    struct stat st {};
    EXPECT_SYS(stat((ctl_ + "/" + f).c_str(), &st)) << f;
  }
}

TEST_F(ControlDir, CannotBeCreatedAgainOrRemoved) {
  ExpectRefused("mkdir .walfs", mkdir(ctl_.c_str(), 0755));
  ExpectRefused("create .walfs", open(ctl_.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644));
  ExpectRefused("rmdir .walfs", rmdir(ctl_.c_str()));
  const int unlink_r = unlink(ctl_.c_str());
  const int e = errno;
  EXPECT_EQ(unlink_r, -1);
  EXPECT_TRUE(e == EISDIR || e == EPERM || e == EACCES) << strerrorname_np(e);
  ExpectRefused("symlink to .walfs", symlink("x", ctl_.c_str()));
  ExpectStillThere();
}

TEST_F(ControlDir, NothingCanBeRenamedOntoOrAwayFromIt) {
  WriteFile(Path("f"), "x");
  ASSERT_SYS(mkdir(Path("d").c_str(), 0755));
  EXPECT_ERRNO(EISDIR, rename(Path("f").c_str(), ctl_.c_str())) << "the kernel's answer";
  ExpectRefused("rename a dir over .walfs", rename(Path("d").c_str(), ctl_.c_str()));
  ExpectRefused("rename .walfs away", rename(ctl_.c_str(), Path("moved").c_str()));
  ExpectRefused("exchange with .walfs",
                renameat2(AT_FDCWD, Path("d").c_str(), AT_FDCWD, ctl_.c_str(), RENAME_EXCHANGE));
  ExpectRefused("link onto .walfs", link(Path("f").c_str(), ctl_.c_str()));
  ExpectStillThere();
  EXPECT_EQ(ReadFile(Path("f")), "x");
}

TEST_F(ControlDir, StatsIsReadableAndNotEmpty) {
  Activity(10);
  const std::string stats = ReadFile(ctl_ + "/stats");
  EXPECT_FALSE(stats.empty());
  EXPECT_NE(stats.find('\n'), std::string::npos) << stats;
}

TEST_F(ControlDir, EnabledEventsShowUpInTrace) {
  Put("tracing_on", "1");
  Put("events/enable", "1");
  Activity(20);
  const std::string trace = ReadFile(ctl_ + "/trace");
  Put("events/enable", "0");
  EXPECT_GE(EventLines(trace), 5u) << "trace after enabling every event:\n" << trace.substr(0, 2000);
}

TEST_F(ControlDir, TracePipeStreamsEventsAsTheyHappen) {
  Put("tracing_on", "1");
  Put("events/enable", "1");
  std::atomic<bool> stop{false};
  // Keep the filesystem busy while `cat` blocks on trace_pipe.
  std::thread busy([&] {
    int i = 0;
    while (!stop.load()) {
      const std::string p = Path("busy" + std::to_string(i++ % 8));
      const int fd = open(p.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
      if (fd >= 0) {
        (void)!write(fd, "b", 1);
        close(fd);
      }
      usleep(5000);
    }
  });
  const ToolRun r = RunTool("timeout 2 cat " + ctl_ + "/trace_pipe");
  stop = true;
  busy.join();
  Put("events/enable", "0");
  EXPECT_EQ(r.exit_code, 124) << "cat should still be blocked reading when timeout ends it";
  EXPECT_GE(EventLines(r.out), 5u) << r.out.substr(0, 2000);
}

// walfs-trace record --mount: the mount's trace through trace_pipe_raw into
// a file every walfs-trace command reads, one timeline across the daemon's
// threads, the command's exit status passed on, the enable bits put back.
TEST_F(ControlDir, RecordMountSavesTheTraceOfACommandAsOneTimeline) {
  Put("events/enable", "0");
  const std::string out = ::testing::TempDir() + "walfs-record-" + std::to_string(getpid()) + ".wtrace";
  const std::string dir = Path("rec");
  const ToolRun r = RunTool(BinDir() + "/walfs-trace record --mount " + Root() + " -o " + out +
                            " -e fs -- sh -c 'mkdir " + dir + " && for i in 1 2 3 4 5 6 7 8; do echo x > " +
                            dir + "/f$i; done; exit 3'");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("0 lost"), std::string::npos) << r.out;
  EXPECT_EQ(ReadFile(ctl_ + "/events/fs/enable"), "0\n") << "enable bits are restored";
  const ToolRun printed = RunTool(BinDir() + "/walfs-trace print " + out);
  ASSERT_EQ(printed.exit_code, 0) << printed.out;
  EXPECT_NE(printed.out.find("fs_mkdir_enter"), std::string::npos) << printed.out.substr(0, 2000);
  EXPECT_NE(printed.out.find("fs_create_enter"), std::string::npos) << printed.out.substr(0, 2000);
  // Who and what: the caller where ftrace puts TASK-PID, named by its task
  // event; the entry's name; a write's offset and length; the worker.
  EXPECT_NE(printed.out.find("fs_task: comm=mkdir"), std::string::npos) << printed.out.substr(0, 3000);
  EXPECT_NE(printed.out.find(" name=rec name_len=3 worker=walfs-"), std::string::npos) << printed.out.substr(0, 3000);
  EXPECT_NE(printed.out.find(" name=f8 name_len=2"), std::string::npos) << printed.out.substr(0, 3000);
  EXPECT_NE(printed.out.find("fs_write_enter: ino="), std::string::npos);
  EXPECT_NE(printed.out.find(" off=0 len=2 worker="), std::string::npos) << printed.out.substr(0, 3000);
  bool mkdir_by_mkdir = false;
  for (std::size_t at = printed.out.find("fs_mkdir_enter"); at != std::string::npos;
       at = printed.out.find("fs_mkdir_enter", at + 1)) {
    const std::size_t bol = printed.out.rfind('\n', at) + 1;
    if (printed.out.compare(bol, 22, "           mkdir-") == 0 ||
        printed.out.substr(bol, at - bol).find(" mkdir-") != std::string::npos)
      mkdir_by_mkdir = true;
  }
  EXPECT_TRUE(mkdir_by_mkdir) << "mkdir's request printed as the mkdir process's:\n" << printed.out.substr(0, 3000);
  // One timeline: the timestamps (the fourth column) never go back.
  double last = 0;
  std::size_t lines = 0;
  for (std::size_t at = 0; at < printed.out.size();) {
    std::size_t end = printed.out.find('\n', at);
    if (end == std::string::npos) end = printed.out.size();
    const std::string line = printed.out.substr(at, end - at);
    at = end + 1;
    const std::size_t colon = line.find(": ");
    const std::size_t bracket = line.find("] ");
    if (line.empty() || line[0] == '#' || colon == std::string::npos || bracket == std::string::npos) continue;
    const double ts = std::stod(line.substr(bracket + 2, colon - bracket - 2));
    EXPECT_GE(ts, last) << line;
    last = ts;
    ++lines;
  }
  EXPECT_GE(lines, 18u);
  // stats answers from the same file: the 8 creates and the one mkdir the
  // command made, each request's caller named.
  const ToolRun stats = RunTool(BinDir() + "/walfs-trace stats " + out);
  ASSERT_EQ(stats.exit_code, 0) << stats.out;
  // The whitespace-separated cells of the first line whose cell `col` is `key`.
  auto row = [&](std::size_t col, const std::string& key) {
    std::istringstream in(stats.out);
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      std::vector<std::string> cells{std::istream_iterator<std::string>(words), {}};
      if (cells.size() > col && cells[col] == key) return cells;
    }
    return std::vector<std::string>{};
  };
  const std::vector<std::string> create = row(0, "create"), mkdir_op = row(0, "mkdir"), caller = row(1, "mkdir");
  ASSERT_EQ(create.size(), 8u) << stats.out;
  EXPECT_EQ(create[1], "8") << stats.out;
  EXPECT_EQ(create[2], "0") << stats.out;
  ASSERT_EQ(mkdir_op.size(), 8u) << stats.out;
  EXPECT_EQ(mkdir_op[1], "1") << stats.out;
  ASSERT_EQ(caller.size(), 6u) << "the mkdir process among the callers:\n" << stats.out;
  EXPECT_EQ(caller[2], "2") << "its lookup and its mkdir:\n" << stats.out;
  EXPECT_TRUE(caller[5] == "mkdir" || caller[5] == "lookup") << "its busiest operation:\n" << stats.out;
  unlink(out.c_str());
}

// set_event, a per-event filter and trace_marker through the mount, as a
// shell user drives them: `echo > set_event` selects, the filter keeps
// only what passes before it is written, and a marker line shows up under
// the process that wrote it.
TEST_F(ControlDir, SetEventFilterAndMarkerWorkFromTheShell) {
  Put("events/enable", "0");
  Put("trace", "");
  ASSERT_EQ(RunTool("echo fs:mkdir_enter > " + ctl_ + "/set_event").exit_code, 0);
  EXPECT_EQ(ReadFile(ctl_ + "/set_event"), "fs:mkdir_enter\n");
  ASSERT_SYS(mkdir(Path("sel").c_str(), 0755));
  const ino_t sel = InodeOf(Path("sel"));
  Put("events/fs/mkdir_enter/filter", "ino == " + std::to_string(sel));
  ASSERT_SYS(mkdir(Path("outside").c_str(), 0755));  // parent: the test directory, filtered out
  ASSERT_SYS(mkdir(Path("sel/inside").c_str(), 0755));
  const ToolRun marker = RunTool("sh -c 'echo \"phase two\" > " + ctl_ + "/trace_marker; echo $$'");
  ASSERT_EQ(marker.exit_code, 0) << marker.out;
  const std::string trace = ReadFile(ctl_ + "/trace");
  Put("events/fs/mkdir_enter/filter", "0");
  Put("events/enable", "0");
  EXPECT_EQ(trace.find("name=outside"), std::string::npos) << trace;
  EXPECT_NE(trace.find("name=inside"), std::string::npos) << trace;
  EXPECT_NE(trace.find("name=sel "), std::string::npos) << "mkdir sel ran before the filter was set:\n" << trace;
  const std::string sh_pid = marker.out.substr(0, marker.out.find('\n'));
  EXPECT_NE(trace.find("-" + sh_pid + " "), std::string::npos) << "the marker under its writer " << sh_pid << ":\n"
                                                                << trace;
  EXPECT_NE(trace.find("user_marker: text=phase\\x20two len=9"), std::string::npos) << trace;
  EXPECT_EQ(EventLines(trace), 3u) << "sel, inside and the marker:\n" << trace;
}

// An xattr request's enter event names the attribute, as a namespace
// operation's names the entry.
TEST_F(ControlDir, XattrEventsNameTheAttribute) {
  Put("events/enable", "0");
  Put("trace", "");
  WriteFile(Path("xa"), "x");
  Put("set_event", "fs:setxattr_enter fs:getxattr_enter fs:removexattr_enter");
  ASSERT_SYS(setxattr(Path("xa").c_str(), "user.colour", "red", 3, 0));
  char buf[8];
  ASSERT_EQ(getxattr(Path("xa").c_str(), "user.colour", buf, sizeof buf), 3);
  ASSERT_SYS(removexattr(Path("xa").c_str(), "user.colour"));
  const std::string trace = ReadFile(ctl_ + "/trace");
  Put("events/enable", "0");
  for (const char* op : {"setxattr", "getxattr", "removexattr"})
    EXPECT_NE(trace.find(fmt::format("fs_{}_enter: ino={} name=user.colour name_len=11 ", op, InodeOf(Path("xa")))),
              std::string::npos)
        << op << ":\n" << trace;
}

// Runs `walfs-trace top MNT -d 3 -n 1` and returns once top has taken its
// first sample: once it has closed `last_read`, the control file it reads
// last before it sleeps (the VFS reports a FUSE file's close to inotify like
// any other).  A fixed sleep was not enough: a TSan build of top on a loaded
// CI machine read its first stats after 12 of the 40 creates below.
class TopRun {
 public:
  TopRun(const std::string& root, const std::string& last_read) {
    inotify_ = inotify_init1(IN_CLOEXEC);
    EXPECT_SYS(inotify_);
    EXPECT_SYS(inotify_add_watch(inotify_, last_read.c_str(), IN_CLOSE_NOWRITE)) << last_read;
    thread_ = std::thread([this, root] { frame_ = RunTool(BinDir() + "/walfs-trace top " + root + " -d 3 -n 1"); });
    pollfd p{.fd = inotify_, .events = POLLIN, .revents = 0};
    EXPECT_EQ(poll(&p, 1, 30'000), 1) << "top did not read " << last_read << " within 30 s";
  }
  ~TopRun() {
    if (thread_.joinable()) thread_.join();
    if (inotify_ >= 0) close(inotify_);
  }
  // Waits for top's one frame.
  ToolRun Frame() {
    thread_.join();
    return frame_;
  }

 private:
  int inotify_ = -1;
  std::thread thread_;
  ToolRun frame_;
};

// walfs-trace top against the mount under a known load: its frame counts
// the creates the load made in its interval, as the stats do, and with the
// fs events on it names the caller from the trace.
TEST_F(ControlDir, TopCountsWhatTheStatsCountAndNamesTheCallers) {
  Put("events/enable", "0");
  ASSERT_SYS(mkdir(Path("top").c_str(), 0755));
  // The line appears with the mount's first create (-1 before it).
  const long long creates_before = std::max(0LL, StatValue(Root(), "fuse_req_create"));
  ToolRun frame;
  {
    // With the fs events off, top reads stats, then events/fs/enable.
    TopRun top(Root(), ctl_ + "/events/fs/enable");
    for (int i = 0; i < 40; ++i) WriteFile(Path(fmt::format("top/f{}", i)), "x");
    frame = top.Frame();
  }
  ASSERT_EQ(frame.exit_code, 0) << frame.out;
  EXPECT_EQ(StatValue(Root(), "fuse_req_create") - creates_before, 40);
  auto cells = [&](const std::string& first) {
    std::istringstream lines(frame.out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::vector<std::string> c{std::istream_iterator<std::string>(words), {}};
      if (!c.empty() && c[0] == first) return c;
    }
    return std::vector<std::string>{};
  };
  const std::vector<std::string> create = cells("create");
  ASSERT_EQ(create.size(), 5u) << frame.out;
  EXPECT_EQ(create[1], "40") << "the interval's creates:\n" << frame.out;
  EXPECT_NE(frame.out.find("since mount, from the stats"), std::string::npos) << frame.out;
  EXPECT_NE(frame.out.find("\nlog      ["), std::string::npos) << frame.out;
  const std::vector<std::string> ail = cells("ail");
  ASSERT_GE(ail.size(), 5u) << frame.out;
  EXPECT_EQ(ail[3], "target") << frame.out;
  EXPECT_NE(ail[4].find(':'), std::string::npos) << "the target's LSN:\n" << frame.out;
  EXPECT_EQ(frame.out.find("\x1b["), std::string::npos) << "no ANSI codes in a pipe";

  // With the fs events on: latency of the interval and the caller, from the trace.
  Put("events/fs/enable", "1");
  {
    // With them on, it reads the trace last: what is older is not this
    // interval's.
    TopRun top(Root(), ctl_ + "/trace");
    for (int i = 0; i < 10; ++i) WriteFile(Path(fmt::format("top/g{}", i)), "x");
    frame = top.Frame();
  }
  Put("events/enable", "0");
  ASSERT_EQ(frame.exit_code, 0) << frame.out;
  EXPECT_NE(frame.out.find("of this interval, from the trace"), std::string::npos) << frame.out;
  EXPECT_EQ(cells("create").size(), 5u) << frame.out;
  EXPECT_NE(frame.out.find(fmt::format("-{} ", getpid())), std::string::npos)
      << "this test process among the callers:\n" << frame.out;
}

TEST_F(ControlDir, TopRefusesWhatIsNotAWalfsMount) {
  const ToolRun r = RunTool(BinDir() + "/walfs-trace top /tmp -n 1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("/tmp: not a walfs mount"), std::string::npos) << r.out;
}

// The daemon's threads are named by role (docs/tracing.md, "Threads by
// role"): the task column of a trace, Perfetto's tracks and ps -L tell a
// FUSE worker from the CIL pusher and the AIL.
TEST_F(ControlDir, TheDaemonsThreadsAreNamedByTheirRole) {
  const pid_t pid = DaemonPid();
  ASSERT_GT(pid, 0);
  WriteFile(Path("role"), "x");  // a worker has served a request
  std::map<std::string, int> names;
  for (const auto& task : std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid))) {
    std::string comm = Slurp(task.path() / "comm");
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    ++names[comm];
  }
  std::string all;
  for (const auto& [n, count] : names) all += fmt::format("{} x{}\n", n, count);
  // The main thread keeps the process's name; so does ThreadSanitizer's
  // background thread in a TSan build of the daemon.
  const int runtime_threads = kSanitizer == Sanitizer::kThread ? 1 : 0;
  EXPECT_GE(names["walfs"], 1) << all;
  EXPECT_LE(names["walfs"], 1 + runtime_threads) << "only the main thread keeps the process's name:\n" << all;
  EXPECT_GE(names["walfs-cil"], 1) << all;
  EXPECT_GE(names["walfs-ail"], 1) << all;
  EXPECT_GE(names["walfs-fuse"] + names["walfs-ring0"], 1) << all;
}

// walfs-trace list MNT: every event the mount has, its fields from the
// format files, and whether it is on now.
TEST_F(ControlDir, ListShowsAMountsEventsTheirFieldsAndWhetherEachIsOn) {
  Put("events/enable", "0");
  Put("events/journal/grant_sleep/enable", "1");
  const ToolRun r = RunTool(BinDir() + "/walfs-trace list " + Root());
  Put("events/enable", "0");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto line = [&](const std::string& name) {
    const std::size_t at = r.out.find("\n" + name + " ");
    return at == std::string::npos ? std::string() : r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  };
  EXPECT_TRUE(line("journal/grant_sleep").ends_with(" on     head tid need free queued mode"))
      << line("journal/grant_sleep") << "\n" << r.out.substr(0, 3000);
  EXPECT_TRUE(line("fs/task").ends_with(" off    caller_pid comm[16] tgid")) << r.out.substr(0, 3000);
  EXPECT_TRUE(line("fs/lookup_enter").ends_with(" off    caller_pid ino name[24] name_len")) << r.out.substr(0, 3000);
}

TEST_F(ControlDir, RecordMountRefusesWhatIsNotAWalfsMountOrAnEvent) {
  const std::string out = ::testing::TempDir() + "walfs-record-bad.wtrace";
  ToolRun r = RunTool(BinDir() + "/walfs-trace record --mount /tmp -o " + out + " --duration 1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("not a walfs mount"), std::string::npos) << r.out;
  r = RunTool(BinDir() + "/walfs-trace record --mount " + Root() + " -o " + out + " -e nosuch --duration 1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no events 'nosuch'"), std::string::npos) << r.out;
  r = RunTool(BinDir() + "/walfs-trace record -o " + out + " --duration 1 -- true");
  EXPECT_EQ(r.exit_code, 2) << r.out;
}

// poll on trace_pipe: tests/fuse/poll_test.cc (it needs -o trace_poll).

// The request of a reader blocked on trace_pipe ends (EINTR) when its
// reader is killed: otherwise, after `umount -l`, that one unanswered READ
// keeps the lazily detached superblock -- and with it the connection and
// the daemon -- alive for good.
TEST_F(ControlDir, KilledTracePipeReaderLetsALazilyUnmountedDaemonExit) {
  if (geteuid() != 0) GTEST_SKIP() << "umount -l needs root";
  Put("tracing_on", "1");
  Put("events/enable", "1");
  const std::string pipe = ctl_ + "/trace_pipe";
  const pid_t cat = fork();
  ASSERT_SYS(cat);
  if (cat == 0) {
    const int null_fd = open("/dev/null", O_WRONLY);
    dup2(null_fd, 1);
    execlp("cat", "cat", pipe.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  usleep(500 * 1000);  // cat now waits in READ; nothing happens on the mount
  ASSERT_SYS(umount2(Root().c_str(), MNT_DETACH));
  kill(cat, SIGKILL);
  int status = 0;
  pid_t reaped = 0;
  for (int i = 0; i < 500 && reaped == 0; ++i) {
    reaped = waitpid(cat, &status, WNOHANG);
    if (reaped == 0) usleep(10 * 1000);
  }
  EXPECT_EQ(reaped, cat) << "the killed reader still waits for walfs to answer its READ after 5 s";
  // The session ends once its last user is gone.  Writing the image back
  // after it is given longer: CI once saw a daemon still running 20 s after
  // the detach, on a loaded machine, with no record of where it was.
  EXPECT_EQ(WaitForSessionEnd(10), "") << "walfs must leave its session once its last user is gone";
  EXPECT_EQ(WaitForDaemonExit(60), "") << "walfs must then write the image back and exit";
  if (reaped == 0) {
    KillDaemon();  // releases cat, which is reaped below
    waitpid(cat, &status, 0);
  }
  MountAgain();  // the suite's teardown unmounts and checks it
}

}  // namespace
}  // namespace walfs::testing
