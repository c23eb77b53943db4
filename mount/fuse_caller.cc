#include "mount/fuse_caller.h"

#include <linux/capability.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <memory>
#include <string>

#include <fmt/format.h>

namespace walfs::mount {

fs::Caller CallerOf(fuse_req_t req) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  return fs::Caller{ctx->uid, ctx->gid, static_cast<std::uint32_t>(ctx->umask)};
}

std::vector<std::uint32_t> GroupsOf(fuse_req_t req) {
  std::vector<gid_t> g(32);
  int n = fuse_req_getgroups(req, static_cast<int>(g.size()), g.data());
  if (n > static_cast<int>(g.size())) {
    g.resize(static_cast<std::size_t>(n));
    n = fuse_req_getgroups(req, n, g.data());
  }
  if (n < 0) return {};
  g.resize(std::min(g.size(), static_cast<std::size_t>(n)));
  return std::vector<std::uint32_t>(g.begin(), g.end());
}

bool ProcessHasCapability(pid_t pid, int cap) {
  if (pid <= 0 || cap < 0 || cap > 63) return false;
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("CapEff:")) continue;
    const std::size_t at = line.find_first_not_of(" \t", 7);
    if (at == std::string::npos) return false;
    std::uint64_t set = 0;
    const char* end = line.data() + line.size();
    if (std::from_chars(line.data() + at, end, set, 16).ec != std::errc()) return false;
    return (set >> cap) & 1;
  }
  return false;
}

SetidCaller SetidCallerOf(fuse_req_t req) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  const std::uint32_t fsgid = ctx->gid;
  const pid_t pid = ctx->pid;
  // The groups are read once, on the first question that needs them.
  auto groups = std::make_shared<std::vector<std::uint32_t>>();
  auto read = std::make_shared<bool>(false);
  SetidCaller c;
  c.in_group = [req, fsgid, groups, read](std::uint32_t gid) {
    if (gid == fsgid) return true;
    if (!*read) {
      *groups = GroupsOf(req);
      *read = true;
    }
    return std::find(groups->begin(), groups->end(), gid) != groups->end();
  };
  c.has_fsetid = [pid] { return ProcessHasCapability(pid, CAP_FSETID); };
  return c;
}

}  // namespace walfs::mount
