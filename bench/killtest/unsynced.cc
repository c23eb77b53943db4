#include "bench/killtest/unsynced.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "bench/killtest/verify.h"

namespace walfs::bench::killtest {

namespace {

constexpr mode_t kCreateModes[] = {0600, 0640, 0644, 0664};
constexpr mode_t kChmodModes[] = {0400, 0600, 0644, 0660, 0700, 0755};
constexpr mode_t kDirModes[] = {0700, 0750, 0755};

template <std::size_t N>
mode_t Pick(std::mt19937_64& rng, const mode_t (&modes)[N]) {
  return modes[rng() % N];
}

class UnsyncedWriter {
 public:
  UnsyncedWriter(const std::string& dir, int ledger_fd) : dir_(dir), ledger_(ledger_fd) {}

  void Line(const std::string& line) {
    if (::write(ledger_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) ::_exit(2);
  }
  [[noreturn]] void Fail(const char* op) {
    const int err = errno;
    const std::string line = fmt::format("E {} {} {}\n", op, err, NowNs());
    (void)!::write(ledger_, line.data(), line.size());
    ::_exit(1);
  }
  std::string Abs(const std::string& rel) const { return dir_ + "/" + rel; }
  void Begin(const std::string& what) { Line(fmt::format("b {} {}\n", seq_, what)); }
  void Ack() { Line(fmt::format("a {} {}\n", seq_++, NowNs())); }

  [[noreturn]] void Run(std::uint64_t seed, std::uint64_t round_seed, int writer, int round, int pause_us) {
    std::mt19937_64 rng(round_seed);
    std::vector<std::string> dirs = {""};  // "" is the round directory itself
    struct File {
      int obj;
      std::string path;
    };
    std::vector<File> files;
    auto in_dir = [&](const std::string& name) {
      const std::string& d = dirs[rng() % dirs.size()];
      return d.empty() ? name : d + "/" + name;
    };
    for (;;) {
      if (pause_us > 0) ::usleep(static_cast<useconds_t>(pause_us));
      const unsigned roll = static_cast<unsigned>(rng() % 100);
      if (files.empty() || roll < 40) {
        const int obj = next_obj_++;
        const std::string path = in_dir(fmt::format("c{}", obj));
        const mode_t mode = Pick(rng, kCreateModes);
        Begin(fmt::format("create {} {} {:o}", obj, path, mode));
        const int fd = ::open(Abs(path).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd < 0) Fail("create");
        const std::string data = UnsyncedContent(seed, writer, round, obj);
        std::size_t done = 0;
        while (done < data.size()) {
          const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
          if (n < 0) Fail("write");
          done += static_cast<std::size_t>(n);
        }
        if (::close(fd) != 0) Fail("close");
        Ack();
        files.push_back({obj, path});
      } else if (roll < 47) {
        const int obj = next_obj_++;
        const std::string path = in_dir(fmt::format("d{}", obj));
        const mode_t mode = Pick(rng, kDirModes);
        Begin(fmt::format("mkdir {} {} {:o}", obj, path, mode));
        if (::mkdir(Abs(path).c_str(), mode) != 0) Fail("mkdir");
        Ack();
        dirs.push_back(path);
      } else if (roll < 67) {
        File& f = files[rng() % files.size()];
        const mode_t mode = Pick(rng, kChmodModes);
        Begin(fmt::format("chmod {} {} {:o}", f.obj, f.path, mode));
        if (::chmod(Abs(f.path).c_str(), mode) != 0) Fail("chmod");
        Ack();
      } else if (roll < 87) {
        File& f = files[rng() % files.size()];
        const std::string to = in_dir(fmt::format("n{}.{}", f.obj, next_name_++));
        Begin(fmt::format("rename {} {} {}", f.obj, f.path, to));
        if (::rename(Abs(f.path).c_str(), Abs(to).c_str()) != 0) Fail("rename");
        Ack();
        f.path = to;
      } else {
        const std::size_t i = rng() % files.size();
        Begin(fmt::format("unlink {} {}", files[i].obj, files[i].path));
        if (::unlink(Abs(files[i].path).c_str()) != 0) Fail("unlink");
        Ack();
        files.erase(files.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
  }

 private:
  const std::string dir_;
  const int ledger_;
  std::uint64_t seq_ = 0;
  int next_obj_ = 0;
  int next_name_ = 0;
};

struct Op {
  std::uint64_t seq = 0;
  std::string kind;
  int obj = 0;
  std::string path, to;
  mode_t mode = 0;
  std::int64_t ack_ns = -1;  // -1: in flight at the kill
  std::string Describe() const {
    if (kind == "rename") return fmt::format("op {} rename {} -> {}", seq, path, to);
    if (kind == "unlink") return fmt::format("op {} unlink {}", seq, path);
    return fmt::format("op {} {} {} {:o}", seq, kind, path, mode);
  }
};

// One state an object can be in: after none of its ops (absent), or after
// one of them.
struct State {
  bool present = false;
  bool dir = false;
  std::string path;
  mode_t mode = 0;
  bool created = false;  // the state its create left (the write may be missing)
};

struct Found {
  bool present = false;
  bool dir = false;
  std::string path;
  mode_t mode = 0;
  std::string bytes;
  std::string Describe() const {
    if (!present) return "absent";
    if (dir) return fmt::format("directory {} mode {:o}", path, mode);
    return fmt::format("file {} mode {:o}, {} bytes", path, mode, bytes.size());
  }
};

bool PrefixOrZeros(const std::string& have, const std::string& want) {
  if (have.size() > want.size()) return false;
  for (std::size_t i = 0; i < have.size(); ++i)
    if (have[i] != want[i] && have[i] != 0) return false;
  return true;
}

}  // namespace

void RunUnsyncedWriter(std::uint64_t seed, std::uint64_t round_seed, int writer, int round,
                       const std::string& dir, int pause_us, int ledger_fd) {
  ::umask(0);  // the modes in the ledger are the modes on disk
  UnsyncedWriter(dir, ledger_fd).Run(seed, round_seed, writer, round, pause_us);
}

UnsyncedOutcome CheckUnsynced(std::uint64_t seed, int writer, int round, const std::string& dir,
                              const std::string& ledger, std::int64_t kill_ns,
                              std::int64_t margin_ns) {
  UnsyncedOutcome out;
  std::vector<Op> ops;
  {
    std::ifstream in(ledger);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string what;
      f >> what;
      if (what == "b") {
        Op op;
        f >> op.seq >> op.kind >> op.obj >> op.path;
        if (op.kind == "rename") {
          f >> op.to;
        } else if (op.kind != "unlink") {
          std::string m;
          f >> m;
          op.mode = static_cast<mode_t>(std::stoul(m, nullptr, 8));
        }
        if (!f || op.seq != ops.size() || (!ops.empty() && ops.back().ack_ns < 0)) {
          out.failures.push_back(fmt::format("ledger {}: bad line '{}'", ledger, line));
          return out;
        }
        ops.push_back(op);
      } else if (what == "a") {
        std::uint64_t seq = 0;
        std::int64_t ns = 0;
        f >> seq >> ns;
        if (!f || ops.empty() || seq != ops.back().seq) {
          out.failures.push_back(fmt::format("ledger {}: bad line '{}'", ledger, line));
          return out;
        }
        ops.back().ack_ns = ns;
      } else if (what == "E") {
        if (std::string e = LedgerErrorBeforeKill(f, kill_ns); !e.empty())
          out.failures.push_back(fmt::format("unsynced writer {}: {}", writer, e));
      }
    }
  }
  if (!out.failures.empty()) return out;

  // Each object's ops, in order; every name any object had.
  std::map<int, std::vector<const Op*>> by_obj;
  std::set<std::string> names;
  for (const Op& op : ops) {
    by_obj[op.obj].push_back(&op);
    names.insert(op.path);
    if (!op.to.empty()) names.insert(op.to);
  }
  auto old = [&](const Op& op) { return op.ack_ns >= 0 && op.ack_ns < kill_ns - margin_ns; };
  for (const Op& op : ops) {
    if (old(op))
      ++out.checked;
    else
      ++out.too_recent;
  }

  for (const auto& [obj, list] : by_obj) {
    // states[k]: after the first k ops of the object.
    std::vector<State> states(1);
    std::set<std::string> paths;
    std::size_t k_min = 0;  // after its last op old enough to be checked
    for (std::size_t i = 0; i < list.size(); ++i) {
      const Op& op = *list[i];
      State s = states.back();
      s.created = false;
      if (op.kind == "create" || op.kind == "mkdir") {
        s = {.present = true, .dir = op.kind == "mkdir", .path = op.path, .mode = op.mode,
             .created = op.kind == "create"};
      } else if (op.kind == "chmod") {
        s.mode = op.mode;
      } else if (op.kind == "rename") {
        s.path = op.to;
      } else {
        s.present = false;
      }
      paths.insert(op.path);
      if (!op.to.empty()) paths.insert(op.to);
      states.push_back(s);
      if (old(op)) k_min = i + 1;
    }
    const bool create_old = old(*list.front());
    const bool create_in_flight = list.front()->ack_ns < 0;

    // What is there: the object at one of its names, or at none.
    Found found;
    bool two = false;
    for (const std::string& p : paths) {
      struct stat st = {};
      if (::lstat((dir + "/" + p).c_str(), &st) != 0) {
        if (errno != ENOENT)
          out.failures.push_back(fmt::format("lstat {}: {}", p, strerrorname_np(errno)));
        continue;
      }
      if (found.present) two = true;
      found.present = true;
      found.dir = S_ISDIR(st.st_mode);
      found.path = p;
      found.mode = st.st_mode & 07777;
      if (S_ISREG(st.st_mode)) {
        std::ifstream in(dir + "/" + p, std::ios::binary);
        found.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      }
    }
    if (two) {
      out.failures.push_back(fmt::format("object {}: at two of its names at once (half-done rename)", obj));
      continue;
    }
    const std::string content =
        list.front()->kind == "create" ? UnsyncedContent(seed, writer, round, obj) : std::string();
    auto matches = [&](const State& s) {
      if (s.present != found.present) return false;
      if (!s.present) return true;
      if (s.dir != found.dir || s.path != found.path || s.mode != found.mode) return false;
      if (s.dir || found.bytes == content) return true;
      if (s.created && create_in_flight) return PrefixOrZeros(found.bytes, content);
      return s.created && !create_old && found.bytes.empty();
    };
    std::optional<std::size_t> best_below;  // the latest matching state older than k_min
    bool ok = false;
    for (std::size_t k = 0; k < states.size(); ++k) {
      if (!matches(states[k])) continue;
      if (k >= k_min) ok = true;
      else best_below = k;
    }
    if (ok) continue;
    if (best_below) {
      std::size_t lost = 0;
      std::string first;
      for (std::size_t i = *best_below; i < k_min; ++i) {
        if (!old(*list[i])) continue;
        ++lost;
        if (first.empty())
          first = fmt::format("{} acknowledged {:.1f} ms before the kill", list[i]->Describe(),
                              static_cast<double>(kill_ns - list[i]->ack_ns) / 1e6);
      }
      out.missing += lost;
      out.failures.push_back(fmt::format("object {}: {} checked op(s) missing, first {}; found {}", obj,
                                         lost, first, found.Describe()));
      continue;
    }
    out.failures.push_back(fmt::format(
        "object {}: found {}, which none of its ops left (ops {} .. {}, the last {})", obj,
        found.Describe(), k_min, states.size() - 1, list.back()->Describe()));
  }

  // Nothing else: every name under the directory is one some op made.
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = std::filesystem::relative(it->path(), dir).string();
    if (names.count(rel) == 0) out.failures.push_back(fmt::format("{}: no op made this name", rel));
  }
  if (ec) out.failures.push_back(fmt::format("listing {}: {}", dir, ec.message()));
  return out;
}

}  // namespace walfs::bench::killtest
