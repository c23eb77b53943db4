#include "bench/killtest/open_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "base/splitmix.h"
#include "bench/killtest/verify.h"

namespace walfs::bench::killtest {

namespace {

constexpr std::size_t kMaxRecord = 8192;

// Bytes [from, from + n) of file `file`'s stream.
std::string Stream(std::uint64_t seed, int writer, int round, int file, std::uint64_t from, std::size_t n) {
  const std::uint64_t key = SplitMix64(seed ^ (std::uint64_t(writer) << 48) ^ (std::uint64_t(round) << 24) ^
                                std::uint64_t(file));
  std::string out(n, '\0');
  std::uint64_t word = SplitMix64(key ^ (from >> 3));  // the 8-byte word `at` is in
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t at = from + i;
    if (i > 0 && (at & 7) == 0) word = SplitMix64(key ^ (at >> 3));
    // Never zero, so a zero byte always means "not written back".
    out[i] = static_cast<char>((word >> (8 * (at & 7))) % 255 + 1);
  }
  return out;
}

std::string FilePath(const std::string& dir, int file) { return fmt::format("{}/f{}", dir, file); }

}  // namespace

void RunOpenWriter(std::uint64_t seed, std::uint64_t round_seed, int writer, int round, const std::string& dir,
                   int pause_us, int ledger_fd) {
  auto line = [&](const std::string& l) {
    if (::write(ledger_fd, l.data(), l.size()) != static_cast<ssize_t>(l.size())) ::_exit(2);
  };
  auto fail = [&](const char* op) {
    const int err = errno;
    line(fmt::format("E {} {} {}\n", op, err, NowNs()));
    ::_exit(1);
  };
  int fds[kOpenFiles];
  std::uint64_t ends[kOpenFiles] = {};
  for (int f = 0; f < kOpenFiles; ++f) {
    fds[f] = ::open(FilePath(dir, f).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fds[f] < 0) fail("create");
  }
  // The creates reach the image like any unsynced change; the directory's
  // fsync makes them durable, so that only the data is in question.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || ::fsync(dfd) != 0) fail("fsync-dir");
  ::close(dfd);
  std::mt19937_64 rng(round_seed);
  for (;;) {
    if (pause_us > 0) ::usleep(static_cast<useconds_t>(pause_us));
    const int f = static_cast<int>(rng() % kOpenFiles);
    const std::size_t n = 1 + rng() % kMaxRecord;
    const std::string data = Stream(seed, writer, round, f, ends[f], n);
    std::size_t done = 0;
    while (done < n) {
      const ssize_t w = ::write(fds[f], data.data() + done, n - done);
      if (w < 0) fail("write");
      done += static_cast<std::size_t>(w);
    }
    ends[f] += n;
    line(fmt::format("w {} {} {}\n", f, ends[f], NowNs()));
  }
}

OpenOutcome CheckOpenWriter(std::uint64_t seed, int writer, int round, const std::string& dir,
                            const std::string& ledger, std::int64_t kill_ns, std::int64_t margin_ns) {
  OpenOutcome out;
  struct Write {
    std::uint64_t end;
    std::int64_t ns;
  };
  std::vector<Write> writes[kOpenFiles];
  {
    std::ifstream in(ledger);
    std::string l;
    while (std::getline(in, l)) {
      std::istringstream fields(l);
      std::string what;
      fields >> what;
      if (what == "w") {
        int f = -1;
        Write w{};
        fields >> f >> w.end >> w.ns;
        if (!fields || f < 0 || f >= kOpenFiles) {
          out.failures.push_back(fmt::format("ledger {}: bad line '{}'", ledger, l));
          return out;
        }
        writes[f].push_back(w);
      } else if (what == "E") {
        if (std::string e = LedgerErrorBeforeKill(fields, kill_ns); !e.empty())
          out.failures.push_back(fmt::format("open writer {}: {}", writer, e));
      }
    }
  }
  for (int f = 0; f < kOpenFiles; ++f) {
    std::uint64_t need = 0, most = 0;  // the checked prefix; the longest the file may be
    for (const Write& w : writes[f]) {
      if (w.ns < kill_ns - margin_ns) {
        ++out.checked;
        need = w.end;
      } else {
        ++out.too_recent;
      }
      most = w.end;
    }
    most += kMaxRecord;  // a write in flight at the kill
    std::ifstream in(FilePath(dir, f), std::ios::binary);
    if (!in) {
      if (!writes[f].empty() || need > 0)
        out.failures.push_back(fmt::format("f{}: missing after the remount", f));
      continue;
    }
    const std::string have((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string want = Stream(seed, writer, round, f, 0, std::max<std::size_t>(have.size(), need));
    if (have.size() > most) {
      out.failures.push_back(fmt::format("f{}: {} bytes, longer than any write made it ({})", f, have.size(), most));
      continue;
    }
    // The first byte of the checked prefix that is not there.
    std::uint64_t bad = need;
    for (std::uint64_t i = 0; i < need; ++i) {
      if (i >= have.size() || have[i] != want[i]) {
        bad = i;
        break;
      }
    }
    for (std::uint64_t i = need; i < have.size(); ++i) {
      if (have[i] != want[i] && have[i] != 0) {
        out.failures.push_back(fmt::format("f{}: byte {} is neither the stream's nor zero", f, i));
        break;
      }
    }
    if (bad < need) {
      // Every checked write ending past the first missing byte is lost.
      std::uint64_t lost = 0;
      std::int64_t oldest = -1;
      for (const Write& w : writes[f]) {
        if (w.ns >= kill_ns - margin_ns) break;
        if (w.end > bad) {
          ++lost;
          if (oldest < 0) oldest = w.ns;
        }
      }
      out.lost += lost;
      const double age_ms = static_cast<double>(kill_ns - oldest) / 1e6;
      out.oldest_lost_ms = std::max(out.oldest_lost_ms, age_ms);
      out.failures.push_back(fmt::format("f{}: {} acknowledged write(s) lost, the oldest {:.1f} ms before the kill "
                                         "(first missing byte {} of {} checked; the file has {})",
                                         f, lost, age_ms, bad, need, have.size()));
    }
  }
  return out;
}

}  // namespace walfs::bench::killtest
