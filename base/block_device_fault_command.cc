#include "base/block_device_fault_command.h"

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

namespace walfs {
namespace {

struct ErrnoName {
  std::string_view name;
  int value;
};
constexpr ErrnoName kErrnos[] = {
    {"EIO", EIO},       {"ENOSPC", ENOSPC}, {"EROFS", EROFS},         {"ENXIO", ENXIO},
    {"ENODEV", ENODEV}, {"ENOMEM", ENOMEM}, {"EREMOTEIO", EREMOTEIO}, {"ETIMEDOUT", ETIMEDOUT},
    {"EAGAIN", EAGAIN}, {"EBADMSG", EBADMSG}, {"EUCLEAN", EUCLEAN},
};

std::vector<std::string_view> Words(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
    const std::size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '\n') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

Result<std::uint64_t> ParseNumber(std::string_view what, std::string_view s) {
  int base = 10;
  std::string_view digits = s;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits.remove_prefix(2);
  }
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
    return Status::InvalidArgument(fmt::format("{}: '{}' is not a number", what, s));
  return v;
}

Result<std::uint64_t> ParseCount(std::string_view what, std::string_view s) {
  WALFS_ASSIGN_OR_RETURN(std::uint64_t n, ParseNumber(what, s));
  if (n == 0) return Status::InvalidArgument(fmt::format("{}: counts start at 1 (the next request)", what));
  return n;
}

}  // namespace

Result<int> ParseErrnoName(std::string_view s) {
  for (const ErrnoName& e : kErrnos)
    if (e.name == s) return e.value;
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (!s.empty() && ec == std::errc() && end == s.data() + s.size() && v > 0 && v < 4096) return v;
  return Status::InvalidArgument(fmt::format("'{}' is not an errno (EIO, ENOSPC, ... or 1..4095)", s));
}

Status ApplyFaultCommand(FaultDevice* dev, std::string_view command) {
  const std::vector<std::string_view> w = Words(command);
  if (w.empty()) return Status::InvalidArgument("empty fault command");
  const std::string_view verb = w[0];
  // How many words the verb needs before its optional errno.
  std::size_t need;
  if (verb == "clear") {
    need = 1;
  } else if (verb == "flushes") {
    need = 1;
  } else if (verb == "write" || verb == "writes" || verb == "flush") {
    need = 2;
  } else if (verb == "tear" || verb == "read") {
    need = 3;
  } else {
    return Status::InvalidArgument(
        fmt::format("unknown fault command '{}' (write, writes, tear, flush, flushes, read, clear)", verb));
  }
  const std::size_t most = verb == "clear" ? 1 : need + 1;
  if (w.size() < need || w.size() > most)
    return Status::InvalidArgument(fmt::format("'{}' takes {} argument{}{}", verb, need - 1, need == 2 ? "" : "s",
                                               most > need ? " and an optional errno" : ""));
  int err = EIO;
  if (w.size() == most && most > need) {
    WALFS_ASSIGN_OR_RETURN(err, ParseErrnoName(w[most - 1]));
  }
  if (verb == "clear") {
    dev->ClearFaults();
  } else if (verb == "flushes") {
    dev->FailFlushes(err);
  } else if (verb == "write") {
    WALFS_ASSIGN_OR_RETURN(std::uint64_t n, ParseCount("write", w[1]));
    dev->FailNthWrite(n, err);
  } else if (verb == "writes") {
    WALFS_ASSIGN_OR_RETURN(std::uint64_t n, ParseCount("writes", w[1]));
    dev->FailWritesFrom(n, err);
  } else if (verb == "flush") {
    WALFS_ASSIGN_OR_RETURN(std::uint64_t n, ParseCount("flush", w[1]));
    dev->FailNthFlush(n, err);
  } else if (verb == "tear") {
    WALFS_ASSIGN_OR_RETURN(std::uint64_t n, ParseCount("tear", w[1]));
    WALFS_ASSIGN_OR_RETURN(std::uint64_t sectors, ParseNumber("tear sectors", w[2]));
    dev->TearNthWrite(n, sectors, err);
  } else {  // read
    WALFS_ASSIGN_OR_RETURN(std::uint64_t off, ParseNumber("read offset", w[1]));
    WALFS_ASSIGN_OR_RETURN(std::uint64_t len, ParseCount("read length", w[2]));
    if (off > dev->size_bytes() || len > dev->size_bytes() - off)
      return Status::InvalidArgument(
          fmt::format("read range {}+{} is past the image's {} bytes", off, len, dev->size_bytes()));
    dev->FailReads(off, len, err);
  }
  return Status::Ok();
}

std::string FaultText(const FaultDevice& dev, std::string_view last_command) {
  const FaultCounters c = dev.counters();
  return fmt::format(
      "last: {}\nreads: {}\nwrites: {}\nflushes: {}\nfailed_reads: {}\nfailed_writes: {}\n"
      "failed_flushes: {}\ntorn_writes: {}\n",
      last_command.empty() ? "none" : last_command, c.reads, c.writes, c.flushes, c.failed_reads,
      c.failed_writes, c.failed_flushes, c.torn_writes);
}

}  // namespace walfs
