#include "tools/trace_record_mount.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "base/status.h"
#include "tracing/reader.h"
#include "tracing/reorder_window.h"
#include "tracing/trace_file.h"
#include "tracing/trace_summary.h"

namespace walfs::tracing {

namespace {

namespace fs = std::filesystem;

constexpr int kExitBad = 1;
constexpr std::size_t kReadBytes = 1 << 20;

volatile std::sig_atomic_t g_stop_signal = 0;
void OnStopSignal(int sig) { g_stop_signal = sig; }
// SIGALRM every kTickUs ends a blocked read (EINTR), so that the loop
// looks at the command, the duration and the stop flag at least that often.
void OnTick(int) {}
constexpr long kTickUs = 200'000;

int Fail(std::string_view what) {
  fmt::print(stderr, "walfs-trace: {}\n", what);
  return kExitBad;
}

Result<std::string> ReadSmallFile(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return Status::FromErrno(errno, "reading " + p.string());
  std::string v;
  std::getline(in, v);
  return v;
}

Status WriteSmallFile(const fs::path& p, std::string_view v) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "opening " + p.string());
  const ssize_t n = ::write(fd, v.data(), v.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(v.size())) return Status::FromErrno(err, "writing " + p.string());
  return Status::Ok();
}

// The patterns of -e, "all" when there are none.
std::vector<std::string> Patterns(const std::string& list) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= list.size()) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    if (comma > at) out.push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  if (out.empty()) out.push_back("all");
  return out;
}

// A pattern's directory below events/: events/ itself for "all".
fs::path PatternDir(const fs::path& events_dir, const std::string& pattern) {
  return pattern == "all" ? events_dir : events_dir / pattern;
}

// The per-event enable files the patterns name, with their values now, so
// that the end of the recording can put them back.
Result<std::map<fs::path, std::string>> EventEnables(const fs::path& events_dir,
                                                     const std::vector<std::string>& patterns) {
  std::map<fs::path, std::string> out;
  for (const std::string& pattern : patterns) {
    const fs::path dir = PatternDir(events_dir, pattern);
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      return Status::NotFound(fmt::format(
          "no events '{}' on this mount (ls {} lists the subsystems)", pattern, events_dir.string()));
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      // events/<subsystem>/<event>/enable: three levels below events/.
      const fs::path rel = it->path().lexically_relative(events_dir);
      if (it->path().filename() != "enable" || std::distance(rel.begin(), rel.end()) != 3) continue;
      WALFS_ASSIGN_OR_RETURN(std::string v, ReadSmallFile(it->path()));
      out.emplace(it->path(), v);
    }
    if (ec) return Status::FromErrno(ec.value(), "listing " + dir.string());
  }
  return out;
}

// The recording: the stream's bytes parsed, put into one timeline
// (ReorderWindow: the newest quarter second of trace clock waits for
// records that come a read late) and appended to the file.
class Recorder {
 public:
  explicit Recorder(std::string path) : path_(std::move(path)), stream_(TraceFileReader::ForStream()) {}

  Status Take(std::string_view bytes) {
    stream_->Feed(bytes);
    std::vector<TraceEntry> batch;
    std::vector<TraceEntry> chunk;
    for (;;) {
      WALFS_RETURN_IF_ERROR(stream_->ReadChunk(&chunk));
      if (chunk.empty()) break;
      batch.insert(batch.end(), chunk.begin(), chunk.end());
    }
    if (!stream_->has_header()) return Status::Ok();
    if (writer_ == nullptr) {
      WALFS_ASSIGN_OR_RETURN(writer_, TraceFileWriter::Create(path_, stream_->info()));
    }
    if (stream_->events().size() != events_) {
      WALFS_RETURN_IF_ERROR(writer_->AddEvents(stream_->events()));
      events_ = stream_->events().size();
    }
    window_.Add(std::move(batch));
    WALFS_RETURN_IF_ERROR(Write(window_.TakeReady()));
    return writer_->Flush();
  }

  Status Close() {
    if (writer_ == nullptr) return Status::IoError("the mount sent no trace stream header");
    if (stream_->unparsed_bytes() > 0)
      fmt::print(stderr, "walfs-trace: the stream stopped inside a section ({} bytes dropped)\n",
                 stream_->unparsed_bytes());
    WALFS_RETURN_IF_ERROR(Write(window_.TakeAll()));
    return writer_->Close();
  }

  const TraceSummary& summary() const { return summary_; }

 private:
  // ns under the monotonic clocks; cycles under `tsc`, a shorter hold.
  static constexpr std::uint64_t kHold = 250'000'000;

  Status Write(const std::vector<TraceEntry>& entries) {
    for (const TraceEntry& e : entries) {
      summary_.Add(e);
      WALFS_RETURN_IF_ERROR(writer_->Append(e));
    }
    return Status::Ok();
  }

  const std::string path_;
  std::unique_ptr<TraceFileReader> stream_;
  std::unique_ptr<TraceFileWriter> writer_;
  std::size_t events_ = 0;
  ReorderWindow window_{kHold};
  TraceSummary summary_;
};

std::optional<pid_t> StartCommand(const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return std::nullopt;
  if (pid == 0) {
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "walfs-trace: %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  return pid;
}

}  // namespace

int RecordMount(const MountRecordOptions& o) {
  const fs::path ctl = fs::path(o.mount) / ".walfs";
  const fs::path pipe = ctl / "trace_pipe_raw";
  std::error_code ec;
  if (!fs::exists(pipe, ec))
    return Fail(fmt::format("{}: not a walfs mount (no {}): is it mounted, and by a walfs with "
                            "trace_pipe_raw?", o.mount, pipe.string()));
  // Before anything is switched on: the trace is the mount owner's and root's.
  if (::access(pipe.c_str(), R_OK) != 0 && errno == EACCES)
    return Fail(fmt::format("{}: {}: the trace is readable by the mount's owner and root only",
                            pipe.string(), strerror(EACCES)));
  const std::vector<std::string> patterns = Patterns(o.events);
  Result<std::map<fs::path, std::string>> enables = EventEnables(ctl / "events", patterns);
  if (!enables.ok()) return Fail(enables.status().ToString());

  // The events on, then a fresh buffer (as trace-cmd record starts with):
  // clearing after enabling drops the requests the enabling itself made.
  // One write per pattern (its level's enable file), so that those are few.
  auto restore = [&] {
    for (const auto& [path, value] : *enables)
      if (Status s = WriteSmallFile(path, value); !s.ok())
        fmt::print(stderr, "walfs-trace: could not restore {}: {}\n", path.string(), s.ToString());
  };
  for (const std::string& pattern : patterns)
    if (Status s = WriteSmallFile(PatternDir(ctl / "events", pattern) / "enable", "1"); !s.ok()) {
      restore();
      return Fail(s.ToString());
    }
  if (Status s = WriteSmallFile(ctl / "trace", "\n"); !s.ok()) {
    restore();
    return Fail(s.ToString());
  }

  const int fd = ::open(pipe.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    restore();
    if (err == EBUSY)
      return Fail(fmt::format("{}: another reader has the trace stream open (a cat of trace_pipe, "
                              "another walfs-trace record): stop it first, since two readers would each "
                              "miss what the other took", pipe.string()));
    return Fail(fmt::format("{}: {}", pipe.string(), strerror(err)));
  }
  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;  // no SA_RESTART: a blocked read returns EINTR
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = OnTick;
  sigaction(SIGALRM, &sa, nullptr);

  std::optional<pid_t> child;
  if (!o.command.empty()) {
    child = StartCommand(o.command);
    if (!child) {
      ::close(fd);
      restore();
      return Fail(Status::FromErrno(errno, "fork").ToString());
    }
  }
  const auto start = std::chrono::steady_clock::now();
  Recorder rec(o.output);
  std::string buf(kReadBytes, '\0');
  Status error;
  int child_rc = 0;
  std::string why = "interrupted";
  // One read; false when the stream ended or failed.  *got: bytes came.
  auto pump = [&](bool* got) {
    *got = false;
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n > 0) {
      *got = true;
      error = rec.Take(std::string_view(buf.data(), static_cast<std::size_t>(n)));
      return error.ok();
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    why = n == 0 ? "the mount ended the stream (unmounted?)"
                 : Status::FromErrno(errno, "reading " + pipe.string()).ToString();
    return false;
  };
  itimerval tick{{0, kTickUs}, {0, kTickUs}};
  setitimer(ITIMER_REAL, &tick, nullptr);
  bool live = true;
  for (;;) {
    if (g_stop_signal != 0) break;
    if (child) {
      int ws = 0;
      if (waitpid(*child, &ws, WNOHANG) == *child) {
        child_rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
        child.reset();
        why = fmt::format("{} exited", o.command[0]);
        break;
      }
    }
    if (o.duration_s > 0 &&
        std::chrono::steady_clock::now() - start >= std::chrono::duration<double>(o.duration_s)) {
      why = fmt::format("{} s passed", o.duration_s);
      break;
    }
    bool got = false;
    if (!pump(&got)) {
      live = false;
      break;
    }
  }
  itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  // What was committed before the stop is in the rings: read until empty,
  // for a second at most (other processes may keep the mount busy).
  const auto drain_end = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  if (live && error.ok() && ::fcntl(fd, F_SETFL, O_NONBLOCK) == 0)
    for (bool got = true; got && std::chrono::steady_clock::now() < drain_end;)
      if (!pump(&got)) break;
  ::close(fd);
  restore();
  if (child) {  // stopped by a signal or the duration: the command goes too
    kill(*child, SIGTERM);
    int ws = 0;
    while (waitpid(*child, &ws, 0) < 0 && errno == EINTR) {
    }
    child_rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  }
  if (error.ok()) error = rec.Close();
  if (!error.ok()) return Fail(fmt::format("{}: {}", o.output, error.ToString()));
  fmt::print(stderr, "walfs-trace: recorded {} events ({} lost) from {} to {} ({})\n",
             rec.summary().records(), rec.summary().lost(), o.mount, o.output, why);
  return o.command.empty() ? 0 : child_rc;
}

}  // namespace walfs::tracing
