#include "bench/killtest/verify.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

namespace walfs::bench::killtest {

namespace {

constexpr std::uint64_t kAppendLimit = 1 << 20;

// The file's bytes, or nullopt (with errno) when it cannot be read.
std::optional<std::string> ReadAll(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  const int err = errno;
  ::close(fd);
  if (n < 0) {
    errno = err;
    return std::nullopt;
  }
  return out;
}

std::size_t FirstDifference(const std::string& a, const std::string& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

Status SyncPath(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, fmt::format("open {}", path));
  const int r = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  return r == 0 ? Status::Ok() : Status::FromErrno(err, fmt::format("fsync {}", path));
}

}  // namespace

std::int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

LedgerSummary ReadLedger(const std::string& path, std::int64_t kill_ns) {
  LedgerSummary s;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string what;
    f >> what;
    if (what == "B" || what == "A") {
      int file = 0;
      std::uint64_t n = 0;
      f >> file >> n;
      (what == "B" ? s.begun : s.acked)[file] = n;
      if (what == "A") ++s.acks;
    } else if (what == "E") {
      if (std::string e = LedgerErrorBeforeKill(f, kill_ns); !e.empty()) s.errors.push_back(std::move(e));
    }
  }
  return s;
}

CheckOutcome CheckAndNormalise(std::uint64_t seed, const std::string& mnt,
                               const std::vector<LedgerSummary>& ledgers,
                               std::vector<FileState>* files) {
  CheckOutcome out;
  for (FileState& f : *files) {
    const LedgerSummary& l = ledgers.at(static_cast<std::size_t>(f.id.writer));
    const std::string path = fmt::format("{}/{}", mnt, f.id.RelPath());
    auto fail = [&](const std::string& why) { out.failures.push_back(fmt::format("{}: {}", f.id.RelPath(), why)); };
    auto begun = l.begun.find(f.id.file);
    auto acked = l.acked.find(f.id.file);
    std::optional<std::string> have = ReadAll(path);
    const int read_err = errno;
    ++out.files_checked;

    if (f.id.replaced()) {
      // Allowed: the last acknowledged generation (this round's or the state
      // before it), or the one begun after it.
      const std::uint64_t ack = acked != l.acked.end() ? acked->second : f.acked;
      const std::uint64_t flight = begun != l.begun.end() && begun->second > ack ? begun->second : 0;
      if (begun != l.begun.end()) f.next = std::max(f.next, begun->second + 1);
      if (!have) {
        if (read_err == ENOENT && ack == 0) {
          f.acked = 0;
          continue;
        }
        fail(fmt::format("cannot be read ({}); acknowledged generation {}", strerrorname_np(read_err), ack));
        continue;
      }
      if (ack != 0 && *have == ReplaceContent(seed, f.id, ack)) {
        f.acked = ack;
      } else if (flight != 0 && *have == ReplaceContent(seed, f.id, flight)) {
        f.acked = flight;
      } else {
        const std::string want = ack ? ReplaceContent(seed, f.id, ack) : std::string();
        fail(fmt::format("holds {} bytes that are neither acknowledged generation {} ({} bytes, "
                         "first difference at byte {}) nor generation {} in flight",
                         have->size(), ack, want.size(), FirstDifference(*have, want), flight));
      }
      continue;
    }

    // Appended: records [0, ack) intact; past them a prefix of record `ack`
    // if it was in flight, or zeros.
    const std::uint64_t ack = acked != l.acked.end() ? acked->second + 1 : f.acked;
    const bool in_flight = begun != l.begun.end() && begun->second == ack;
    std::string want;
    for (std::uint64_t n = 0; n < ack; ++n) want += AppendRecord(seed, f.id, n);
    if (!have) {
      if (read_err == ENOENT && ack == 0) {
        f.acked = 0;
        continue;
      }
      fail(fmt::format("cannot be read ({}); {} records ({} bytes) acknowledged",
                       strerrorname_np(read_err), ack, want.size()));
      continue;
    }
    if (have->size() < want.size() || have->compare(0, want.size(), want) != 0) {
      fail(fmt::format("{} acknowledged records ({} bytes) are not intact: the file has {} bytes, "
                       "first difference at byte {}",
                       ack, want.size(), have->size(), FirstDifference(*have, want)));
      continue;
    }
    const std::string next = in_flight ? AppendRecord(seed, f.id, ack) : std::string();
    const std::size_t extra = have->size() - want.size();
    bool tail_ok = extra <= next.size();
    for (std::size_t i = 0; tail_ok && i < extra; ++i) {
      const char c = (*have)[want.size() + i];
      tail_ok = c == next[i] || c == 0;
    }
    if (!tail_ok) {
      fail(fmt::format("{} bytes past the {} acknowledged records are neither the record in flight "
                       "({} bytes) nor zeros",
                       extra, ack, in_flight ? next.size() : 0));
      continue;
    }
    f.acked = ack;
    f.next = ack;
    // Continue from the acknowledged records only; start over past the limit.
    Status s;
    if (want.size() > kAppendLimit) {
      if (::unlink(path.c_str()) != 0) s = Status::FromErrno(errno, fmt::format("unlink {}", path));
      f.acked = f.next = 0;
    } else if (extra != 0) {
      if (::truncate(path.c_str(), static_cast<off_t>(want.size())) != 0)
        s = Status::FromErrno(errno, fmt::format("truncate {}", path));
      else
        s = SyncPath(path, O_WRONLY);
    }
    if (s.ok() && want.size() > kAppendLimit)
      s = SyncPath(fmt::format("{}/w{}", mnt, f.id.writer), O_RDONLY | O_DIRECTORY);
    if (!s.ok()) fail(fmt::format("after the check: {}", s.message()));
  }
  return out;
}

std::string LedgerErrorBeforeKill(std::istream& fields, std::int64_t kill_ns) {
  std::string op;
  int err = 0;
  std::int64_t ns = 0;
  fields >> op >> err >> ns;
  const bool dead_connection = err == ENOTCONN || err == ECONNABORTED || err == ENODEV;
  if (dead_connection || ns >= kill_ns) return "";
  return fmt::format("{} failed with {} before the kill", op, strerrorname_np(err));
}

}  // namespace walfs::bench::killtest
