#include "bench/killtest/campaign.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "bench/killtest/open_writer.h"
#include "bench/killtest/process.h"
#include "bench/killtest/unsynced.h"
#include "bench/killtest/verify.h"

namespace walfs::bench::killtest {

namespace {

std::string FirstLine(const std::string& text, std::string_view containing) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    if (line.find(containing) != std::string::npos) return line;
    pos = end + 1;
  }
  return "";
}

bool Executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

std::string UnsyncedDir(const std::string& mnt, int u, int round) {
  return fmt::format("{}/u{}/r{}", mnt, u, round);
}

std::string OpenDir(const std::string& mnt, int u, int round) { return fmt::format("{}/o{}/r{}", mnt, u, round); }

// Opens (truncates) the ledger `path` and forks a writer process in a
// process group of its own, which runs `run(ledger_fd)` and never returns.
// "" and the pid in *pid, or why not.
std::string ForkWriter(const std::string& path, const std::function<void(int)>& run, pid_t* pid) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return fmt::format("ledger {}: {}", path, std::strerror(errno));
  *pid = ::fork();
  if (*pid == 0) {
    ::setpgid(0, 0);
    run(fd);
    ::_exit(2);  // run() does not return
  }
  const int err = errno;
  ::close(fd);
  if (*pid < 0) return fmt::format("fork: {}", std::strerror(err));
  ::setpgid(*pid, *pid);
  return "";
}

}  // namespace

Campaign::~Campaign() {
  if (daemon_.pid > 0) {  // an early return: leave no mount behind
    (void)UnmountAndWait(setup_, &daemon_, o_.timeout_s);
    KillGroupAndReap(daemon_.pid);
  }
}

Status Campaign::Prepare() {
  std::string templ = o_.dir + "/walfs-killtest-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr)
    return Status::FromErrno(errno, fmt::format("mkdtemp in {}", o_.dir));
  work_ = templ;
  setup_ = {.bin_dir = o_.bin_dir, .image = work_ + "/image", .mnt = work_ + "/mnt",
            .daemon_log = work_ + "/walfs.log", .mount_options = o_.mount_options,
            .transport = o_.transport};
  if (::mkdir(setup_.mnt.c_str(), 0755) != 0) return Status::FromErrno(errno, "mkdir mnt");
  for (const char* tool : {"walfs", "mkfs.walfs", "fsck.walfs"}) {
    if (!Executable(o_.bin_dir + "/" + tool))
      return Status::NotFound(fmt::format("{}/{} is missing (--bin-dir)", o_.bin_dir, tool));
  }
  RunResult mkfs = Run({o_.bin_dir + "/mkfs.walfs", "-q", "-f", setup_.image, o_.image_size});
  if (mkfs.exit_code != 0) return Status::IoError("mkfs.walfs failed: " + mkfs.output);
  for (int w = 0; w < o_.writers; ++w)
    for (int f = 0; f < o_.files_per_writer; ++f) files_.push_back({.id = {w, f}});
  // The writers' directories, made durable once.
  WALFS_ASSIGN_OR_RETURN(daemon_, StartDaemon(setup_, o_.timeout_s));
  for (int w = 0; w < o_.writers; ++w) {
    const std::string d = fmt::format("{}/w{}", setup_.mnt, w);
    if (::mkdir(d.c_str(), 0755) != 0) return Status::FromErrno(errno, "mkdir " + d);
  }
  for (int u = 0; u < o_.unsynced_writers; ++u) {
    const std::string d = fmt::format("{}/u{}", setup_.mnt, u);
    if (::mkdir(d.c_str(), 0755) != 0) return Status::FromErrno(errno, "mkdir " + d);
  }
  for (int u = 0; u < o_.open_writers; ++u) {
    const std::string d = fmt::format("{}/o{}", setup_.mnt, u);
    if (::mkdir(d.c_str(), 0755) != 0) return Status::FromErrno(errno, "mkdir " + d);
  }
  ::sync();
  return UnmountAndWait(setup_, &daemon_, o_.timeout_s);
}

// Starts walfs-aim and fio (when enabled and present) in the mount.
std::string Campaign::Loads(int round, std::vector<pid_t>* pids) {
  if (o_.aim && Executable(o_.bin_dir + "/walfs-aim")) {
    const std::string dir = setup_.mnt + "/aim";
    if (::mkdir(dir.c_str(), 0755) != 0) return "mkdir aim: " + std::string(std::strerror(errno));
    Result<pid_t> p = Spawn({o_.bin_dir + "/walfs-aim", dir, "-s", "2", "-e", "2", "-j", "100000",
                             "--filesize", "4K", "--poolsize", "256K", "--seed",
                             std::to_string(o_.seed + static_cast<std::uint64_t>(round))},
                            LogTo(work_ + "/aim.log"));
    if (!p.ok()) return std::string(p.status().message());
    pids->push_back(*p);
  }
  const std::string job = fmt::format("{}/{}", o_.fio_dir,
                                      round % 2 ? "seqwrite-1m-verify.fio" : "randwrite-4k-verify.fio");
  if (o_.fio && Executable(o_.fio_dir + "/run-job.sh") && ::access(job.c_str(), R_OK) == 0) {
    const std::string dir = setup_.mnt + "/fio";
    if (::mkdir(dir.c_str(), 0755) != 0) return "mkdir fio: " + std::string(std::strerror(errno));
    SpawnOptions so = LogTo(work_ + "/fio.log");
    so.env = {"SIZE=" + o_.fio_size, "DIRECT=0", "IOENGINE=psync"};
    // --loops: write and verify again and again until the kill.  --thread:
    // the jobs run as threads of the process killed at the end of the
    // round; as processes of their own they call setsid(), out of reach of
    // the kill of its group, and one stuck on the dead mount outlived the
    // run (found left over after ctest).
    Result<pid_t> p = Spawn({o_.fio_dir + "/run-job.sh", job, dir, "--loops=100000", "--thread"}, so);
    if (!p.ok()) return std::string(p.status().message());
    pids->push_back(*p);
  }
  return "";
}

std::string Campaign::RemoveLoadDirs(int round) {
  std::vector<std::string> dirs = {setup_.mnt + "/aim", setup_.mnt + "/fio"};
  for (int u = 0; u < o_.unsynced_writers; ++u) dirs.push_back(UnsyncedDir(setup_.mnt, u, round));
  for (int u = 0; u < o_.open_writers; ++u) dirs.push_back(OpenDir(setup_.mnt, u, round));
  for (const std::string& d : dirs) {
    std::error_code ec;
    std::filesystem::remove_all(d, ec);
    if (ec) return fmt::format("removing {} after recovery: {}", d, ec.message());
  }
  return "";
}

RoundResult Campaign::RunRound(int round) {
  RoundResult r;
  r.round = round;
  std::mt19937_64 rng(o_.seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(round));
  r.delay_ms = o_.min_delay_ms +
               static_cast<int>(rng() % static_cast<std::uint64_t>(o_.max_delay_ms - o_.min_delay_ms + 1));
  const std::uint64_t round_seed = rng();

  Result<Daemon> d = StartDaemon(setup_, o_.timeout_s);
  if (!d.ok()) return r.failure = "mount: " + std::string(d.status().message()), r;
  daemon_ = *d;

  // The loads: our writers, then walfs-aim and fio.  A quiet round runs
  // the unsynced writers alone: any fsync forces the whole log, theirs
  // included, and so does the AIL meeting pinned items after a heavy fsync
  // load, so only there does nothing but the lazy push (or commit=) write
  // their changes to the image.  The mount before it was a clean unmount.
  r.quiet = o_.quiet_every > 0 && o_.unsynced_writers > 0 && round % o_.quiet_every == 1;
  std::vector<pid_t> loads;
  std::vector<std::string> ledger_paths;
  for (int w = 0; w < o_.writers; ++w) {
    ledger_paths.push_back(fmt::format("{}/ledger-w{}", work_, w));
    if (r.quiet) {  // an empty ledger: the files must hold what they held
      const int fd = ::open(ledger_paths.back().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) return r.failure = "ledger: " + std::string(std::strerror(errno)), r;
      ::close(fd);
      continue;
    }
    std::vector<FileState> mine;
    for (const FileState& f : files_)
      if (f.id.writer == w) mine.push_back(f);
    pid_t pid = -1;
    const std::string e = ForkWriter(ledger_paths.back(), [&](int ledger) {
      RunWriter(o_.seed, round_seed + static_cast<std::uint64_t>(w), setup_.mnt, std::move(mine), ledger);
    }, &pid);
    if (!e.empty()) return r.failure = e, r;
    loads.push_back(pid);
  }
  // The unsynced writers, each in a new directory made durable first (a
  // directory's fsync forces the whole log).
  std::vector<std::string> unsynced_ledgers;
  for (int u = 0; u < o_.unsynced_writers; ++u) {
    const std::string dir = UnsyncedDir(setup_.mnt, u, round);
    if (::mkdir(dir.c_str(), 0755) != 0) return r.failure = "mkdir " + dir + ": " + std::strerror(errno), r;
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || ::fsync(dfd) != 0) return r.failure = "fsync " + dir + ": " + std::strerror(errno), r;
    ::close(dfd);
    unsynced_ledgers.push_back(fmt::format("{}/ledger-u{}", work_, u));
    pid_t pid = -1;
    const std::string e = ForkWriter(unsynced_ledgers.back(), [&](int ledger) {
      RunUnsyncedWriter(o_.seed, round_seed ^ (0x5bd1e995ull * static_cast<std::uint64_t>(u + 1)), u, round, dir,
                        o_.unsynced_pause_us, ledger);
    }, &pid);
    if (!e.empty()) return r.failure = e, r;
    loads.push_back(pid);
  }
  // The open writers, each in a new durable directory.
  std::vector<std::string> open_ledgers;
  for (int u = 0; u < o_.open_writers; ++u) {
    const std::string dir = OpenDir(setup_.mnt, u, round);
    if (::mkdir(dir.c_str(), 0755) != 0) return r.failure = "mkdir " + dir + ": " + std::strerror(errno), r;
    open_ledgers.push_back(fmt::format("{}/ledger-o{}", work_, u));
    pid_t pid = -1;
    const std::string e = ForkWriter(open_ledgers.back(), [&](int ledger) {
      RunOpenWriter(o_.seed, round_seed ^ (0x2545f491ull * static_cast<std::uint64_t>(u + 1)), u, round, dir,
                    o_.open_pause_us, ledger);
    }, &pid);
    if (!e.empty()) return r.failure = e, r;
    loads.push_back(pid);
  }
  if (!r.quiet)
    if (std::string e = Loads(round, &loads); !e.empty()) r.failure = "loads: " + e;

  // The crash.
  std::this_thread::sleep_for(std::chrono::milliseconds(r.delay_ms));
  const std::int64_t kill_ns = NowNs();
  KillGroupAndReap(std::exchange(daemon_.pid, -1));
  for (pid_t p : loads) KillGroupAndReap(p);
  if (!r.failure.empty()) return r;
  // statfs always reaches the (dead) daemon; stat may be served from cache.
  struct statfs sf = {};
  if (::statfs(setup_.mnt.c_str(), &sf) == 0 || errno != ENOTCONN)
    return r.failure = fmt::format("after the kill, statfs {} gave {}, not ENOTCONN", setup_.mnt,
                                   strerrorname_np(errno)), r;

  // Recovery: walfs itself must clear the dead mount.
  d = StartDaemon(setup_, o_.timeout_s);
  if (!d.ok()) return r.failure = "remount after the kill: " + std::string(d.status().message()), r;
  daemon_ = *d;
  r.recovery_ms = d->mount_ms;
  // "walfs: IMAGE: <device>; <geometry>; log recovered: N transactions, ..."
  r.replayed = FirstLine(d->output, setup_.image + ": ");
  if (const auto p = r.replayed.rfind("; "); p != std::string::npos) r.replayed = r.replayed.substr(p + 2);
  if (FirstLine(d->output, "Transport endpoint is not connected").empty())
    return r.failure = "walfs did not report the dead mount it replaced; it said:\n" + d->output, r;

  std::vector<LedgerSummary> ledgers;
  for (const std::string& p : ledger_paths) {
    ledgers.push_back(ReadLedger(p, kill_ns));
    r.ops_acked += ledgers.back().acks;
    for (const std::string& e : ledgers.back().errors)
      if (r.failure.empty()) r.failure = fmt::format("writer {}: {}", ledgers.size() - 1, e);
  }
  if (!r.failure.empty()) return r;
  CheckOutcome check = CheckAndNormalise(o_.seed, setup_.mnt, ledgers, &files_);
  r.files_checked = check.files_checked;
  if (!check.failures.empty()) {
    r.failure = fmt::format("{} file(s) lost acknowledged data:", check.failures.size());
    for (const std::string& f : check.failures) r.failure += "\n  " + f;
  }
  // The unsynced writers: every change acknowledged more than the margin
  // before the kill is there.
  std::vector<std::string> unsynced_failures;
  for (int u = 0; u < o_.unsynced_writers; ++u) {
    UnsyncedOutcome un = CheckUnsynced(o_.seed, u, round, UnsyncedDir(setup_.mnt, u, round),
                                       unsynced_ledgers[static_cast<std::size_t>(u)], kill_ns,
                                       std::int64_t{o_.unsynced_margin_ms} * 1'000'000);
    r.unsynced_checked += un.checked;
    r.unsynced_too_recent += un.too_recent;
    r.unsynced_missing += un.missing;
    for (const std::string& f : un.failures) unsynced_failures.push_back(fmt::format("u{}: {}", u, f));
  }
  for (int u = 0; u < o_.open_writers; ++u) {
    OpenOutcome op = CheckOpenWriter(o_.seed, u, round, OpenDir(setup_.mnt, u, round),
                                     open_ledgers[static_cast<std::size_t>(u)], kill_ns,
                                     std::int64_t{o_.open_margin_ms} * 1'000'000);
    r.open_checked += op.checked;
    r.open_lost += op.lost;
    r.open_oldest_lost_ms = std::max(r.open_oldest_lost_ms, op.oldest_lost_ms);
    for (const std::string& f : op.failures)
      unsynced_failures.push_back(fmt::format("o{} (open files, margin {} ms): {}", u, o_.open_margin_ms, f));
  }
  if (!unsynced_failures.empty()) {
    if (!r.failure.empty()) r.failure += "\n";
    r.failure += fmt::format("unsynced and open-file writers: {} problem(s), {} checked unsynced change(s) missing (of {} checked; "
                             "margin {} ms):",
                             unsynced_failures.size(), r.unsynced_missing, r.unsynced_checked,
                             o_.unsynced_margin_ms);
    constexpr std::size_t kShown = 20;
    for (std::size_t i = 0; i < unsynced_failures.size() && i < kShown; ++i)
      r.failure += "\n  " + unsynced_failures[i];
    if (unsynced_failures.size() > kShown)
      r.failure += fmt::format("\n  ... and {} more", unsynced_failures.size() - kShown);
  }
  if (!r.failure.empty()) return r;
  if (std::string e = RemoveLoadDirs(round); !e.empty()) return r.failure = e, r;

  if (Status s = UnmountAndWait(setup_, &daemon_, o_.timeout_s); !s.ok())
    return r.failure = "clean unmount after recovery: " + std::string(s.message()), r;
  RunResult fsck = Run({o_.bin_dir + "/fsck.walfs", "-n", setup_.image});
  r.fsck = fsck.exit_code == 0 ? "clean" : fmt::format("exit {}", fsck.exit_code);
  if (fsck.exit_code != 0) r.failure = "fsck.walfs -n:\n" + fsck.output;
  return r;
}

void Campaign::Finish(bool keep) {
  if (keep || work_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(work_, ec);
}

}  // namespace walfs::bench::killtest
