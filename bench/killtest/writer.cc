#include "bench/killtest/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <random>

#include <fmt/format.h>

#include "base/splitmix.h"
#include "bench/killtest/unsynced.h"

namespace walfs::bench::killtest {

namespace {

std::string Bytes(std::uint64_t key, std::size_t min, std::size_t max, const std::string& head) {
  std::uint64_t s = SplitMix64(key);
  const std::size_t len = min + static_cast<std::size_t>(s % (max - min + 1));
  std::string out = head;
  out.reserve(len);
  while (out.size() < len) {
    s = SplitMix64(s);
    for (int i = 0; i < 8 && out.size() < len; ++i) out.push_back(static_cast<char>(s >> (8 * i)));
  }
  out.resize(len);
  return out;
}

std::uint64_t Key(std::uint64_t seed, const FileId& id, std::uint64_t n, std::uint64_t kind) {
  return SplitMix64(SplitMix64(SplitMix64(SplitMix64(seed) ^ static_cast<std::uint64_t>(id.writer)) ^
                 static_cast<std::uint64_t>(id.file)) ^ n) ^ kind;
}

std::int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

class Writer {
 public:
  Writer(const std::string& mnt, int ledger_fd) : mnt_(mnt), ledger_(ledger_fd) {}

  void Note(char what, int file, std::uint64_t n) {
    const std::string line = fmt::format("{} {} {}\n", what, file, n);
    if (::write(ledger_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) ::_exit(2);
  }
  [[noreturn]] void Fail(const char* op) {
    const int err = errno;
    const std::string line = fmt::format("E {} {} {}\n", op, err, MonotonicNs());
    (void)!::write(ledger_, line.data(), line.size());
    ::_exit(1);
  }
  void WriteAll(int fd, const std::string& data, const char* op) {
    std::size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
      if (n < 0) Fail(op);
      done += static_cast<std::size_t>(n);
    }
  }

  void Replace(std::uint64_t seed, FileState* f) {
    const std::uint64_t gen = f->next++;
    const std::string path = fmt::format("{}/{}", mnt_, f->id.RelPath());
    const std::string tmp = path + ".tmp";
    Note('B', f->id.file, gen);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) Fail("open-tmp");
    WriteAll(fd, ReplaceContent(seed, f->id, gen), "write-tmp");
    if (::fsync(fd) != 0) Fail("fsync-tmp");
    if (::close(fd) != 0) Fail("close-tmp");
    if (::rename(tmp.c_str(), path.c_str()) != 0) Fail("rename");
    const std::string dir = fmt::format("{}/w{}", mnt_, f->id.writer);
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) Fail("open-dir");
    if (::fsync(dfd) != 0) Fail("fsync-dir");
    ::close(dfd);
    f->acked = gen;
    Note('A', f->id.file, gen);
  }

  void Append(std::uint64_t seed, FileState* f) {
    const std::uint64_t n = f->acked;
    const std::string path = fmt::format("{}/{}", mnt_, f->id.RelPath());
    Note('B', f->id.file, n);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) Fail("open-append");
    WriteAll(fd, AppendRecord(seed, f->id, n), "append");
    if (::fsync(fd) != 0) Fail("fsync-append");
    if (::close(fd) != 0) Fail("close-append");
    if (n == 0) {  // a new file: its name must be durable too
      const std::string dir = fmt::format("{}/w{}", mnt_, f->id.writer);
      const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dfd < 0) Fail("open-dir");
      if (::fsync(dfd) != 0) Fail("fsync-dir");
      ::close(dfd);
    }
    f->acked = n + 1;
    Note('A', f->id.file, n);
  }

 private:
  const std::string mnt_;
  const int ledger_;
};

}  // namespace

std::string FileId::RelPath() const { return fmt::format("w{}/f{}", writer, file); }

std::string ReplaceContent(std::uint64_t seed, const FileId& id, std::uint64_t gen) {
  return Bytes(Key(seed, id, gen, 1), 1, 64 * 1024,
               fmt::format("walfs-killtest w{} f{} gen {}\n", id.writer, id.file, gen));
}

std::string AppendRecord(std::uint64_t seed, const FileId& id, std::uint64_t n) {
  return Bytes(Key(seed, id, n, 2), 64, 8 * 1024,
               fmt::format("walfs-killtest w{} f{} record {}\n", id.writer, id.file, n));
}

std::string UnsyncedContent(std::uint64_t seed, int writer, int round, int obj) {
  // Writer numbers of their own (1000 + u), so no key repeats an fsync writer's.
  const FileId id{1000 + writer, obj};
  return Bytes(Key(seed, id, static_cast<std::uint64_t>(round), 3), 1, 3000,
               fmt::format("walfs-killtest u{} r{} o{}\n", writer, round, obj));
}

void RunWriter(std::uint64_t seed, std::uint64_t round_seed, const std::string& mnt,
               std::vector<FileState> files, int ledger_fd) {
  Writer w(mnt, ledger_fd);
  std::mt19937_64 rng(round_seed);
  for (;;) {
    FileState& f = files[rng() % files.size()];
    if (f.id.replaced())
      w.Replace(seed, &f);
    else
      w.Append(seed, &f);
  }
}

}  // namespace walfs::bench::killtest
