#include "crash/namespace_oracle.h"

#include <algorithm>

#include <fmt/format.h>

namespace walfs::crash {

NamespaceOracle::NamespaceOracle(const History& h) : h_(h) {
  std::map<std::uint64_t, std::ptrdiff_t> last;  // inode -> last operation that logged it
  for (std::size_t i = 0; i < h_.log.size(); ++i) {
    const OpRec& o = h_.log[i];
    if (o.fsynced != 0) {
      auto it = last.find(o.fsynced);
      forced_.push_back({i, it == last.end() ? -1 : it->second});
    }
    for (std::uint64_t ino : o.touched) last[ino] = static_cast<std::ptrdiff_t>(i);
  }
}

std::optional<std::string> NamespaceOracle::Check(const Namespace& got, std::size_t limit,
                                                  std::size_t moment) const {
  std::ptrdiff_t durable = -1;  // every operation up to this one is on disk
  std::size_t by = 0;           // the fsync that says so
  for (const auto& [fsync, op] : forced_)
    if (h_.log[fsync].end <= moment && op > durable) durable = op, by = fsync;
  // States [lo, hi] of h_.namespaces are allowed.
  std::size_t lo = 0, hi = 0;
  for (std::size_t s = 0; s < h_.namespaces.size(); ++s) {
    const std::ptrdiff_t op = h_.namespaces[s].op;
    if (op <= durable) lo = s;
    if (op < 0 || h_.log[op].start < limit) hi = s;
  }
  if (hi < lo) hi = lo;  // cannot happen: an fsync that returned ran before the crash
  for (std::size_t s = lo; s <= hi; ++s)
    if (h_.namespaces[s].names == got) return std::nullopt;
  // The closest allowed state, for the message.
  std::size_t best = lo, best_diff = SIZE_MAX;
  for (std::size_t s = lo; s <= hi; ++s) {
    const Namespace& want = h_.namespaces[s].names;
    std::size_t d = 0;
    for (const auto& [n, ino] : got) d += !want.count(n) || want.at(n) != ino;
    for (const auto& [n, ino] : want) d += !got.count(n);
    if (d < best_diff) best = s, best_diff = d;
  }
  auto after = [&](std::size_t s) {
    const std::ptrdiff_t op = h_.namespaces[s].op;
    return op < 0 ? std::string("the start") : fmt::format("op {} ({})", op, h_.log[op].text);
  };
  std::string why = fmt::format("the names match no state the log allows: after {} .. after {}", after(lo),
                                after(hi));
  if (durable >= 0) why += fmt::format(" (durable through op {} by {})", durable, h_.log[by].text);
  return why + fmt::format("; closest, after {}:{}", after(best), Diff(got, h_.namespaces[best]));
}

std::string NamespaceOracle::Diff(const Namespace& got, const NamespaceState& want) const {
  auto who = [&](std::uint64_t ino) {
    std::string s = fmt::format("ino {}", ino);
    for (const File& f : h_.files)
      if (f.ino == ino) s += fmt::format(" f{}", f.fid);
    return s;
  };
  std::string d;
  for (const auto& [n, ino] : want.names) {
    auto it = got.find(n);
    if (it == got.end()) d += fmt::format(" {}/{} missing (want {});", n.first, n.second, who(ino));
    else if (it->second != ino)
      d += fmt::format(" {}/{} is {}, want {};", n.first, n.second, who(it->second), who(ino));
  }
  for (const auto& [n, ino] : got)
    if (!want.names.count(n)) d += fmt::format(" {}/{} -> {} should not exist;", n.first, n.second, who(ino));
  return d;
}

}  // namespace walfs::crash
