// fsck phase 5, unlinked lists and link counts: each AG's unlinked list
// holds in-use inodes with no links and no loop (a rebuilt AG header keeps
// its old head only if it still leads to such a list); every in-use inode
// is reached by the tree (phase 4) or on a list; one reached has as many
// links as were found to it -- set so with `repair`, once the tree's own
// repairs are made.
#include <set>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "fs/fsck_ag_repair.h"
#include "fs/fsck_phases.h"

namespace walfs::fs::fsck {

using namespace format;  // NOLINT(build/namespaces): the checker speaks the format's language

namespace {

// A rebuilt header keeps its old unlinked head only if it leads to a
// sound list: in-use inodes of this AG with no links, no loop.  Else the
// list starts empty, and its inodes are ones nothing reaches
// (/lost+found, with -y).
void SalvageUnlinkedHead(Context* c, std::uint32_t agno) {
  const Superblock& sb = c->sb();
  AgState& ag = c->ags[agno];
  std::set<std::uint64_t> seen;
  bool sound = true;
  for (std::uint64_t ino = ag.salvaged_head; sound && ino != 0;) {
    auto it = c->inodes.find(ino);
    const std::uint64_t block = ino / sb.inodes_per_block();
    sound = it != c->inodes.end() && it->second.nlink == 0 && seen.insert(ino).second &&
            block >= sb.AgStart(agno) && block < sb.AgStart(agno) + sb.AgLength(agno);
    if (sound) ino = it->second.next_unlinked;
  }
  ag.header = GeometryAgHeader(sb, agno, ag.bitmap_on_disk, ag.imap_on_disk);
  ag.header.unlinked_head = sound ? ag.salvaged_head : 0;
}

}  // namespace

void CheckUnlinked(Context* c) {
  const Superblock& sb = c->sb();
  FsckReport* r = c->report;
  std::unordered_map<std::uint64_t, bool> on_list;
  for (std::uint32_t agno = 0; agno < sb.ag_count; ++agno) {
    AgState& ag = c->ags[agno];
    if (ag.rebuild_header) SalvageUnlinkedHead(c, agno);
    if (!ag.header_ok && !ag.rebuild_header) continue;
    std::uint64_t ino = ag.header.unlinked_head;
    for (std::uint64_t steps = 0; ino != 0; ++steps) {
      auto it = c->inodes.find(ino);
      if (it == c->inodes.end()) {
        c->Problem(fmt::format("AG {} unlinked list: inode {} is not in use", agno, ino));
        break;
      }
      if (on_list[ino]) {
        c->Problem(fmt::format("AG {} unlinked list loops at inode {}", agno, ino));
        break;
      }
      on_list[ino] = true;
      if (it->second.nlink != 0)
        c->Problem(fmt::format("inode {} is on the unlinked list with {} links", ino, it->second.nlink));
      ino = it->second.next_unlinked;
    }
  }
  // Inodes nothing reaches but an entry of another such directory: those
  // come back with it when it is reconnected.
  std::unordered_map<std::uint64_t, bool> named_by_lost;
  for (const auto& [ino, info] : c->inodes)
    if (!info.reached)
      for (const DirEntry& e : info.entries) named_by_lost[e.ino] = true;
  for (auto& [ino, info] : c->inodes) {
    if (!info.reached) {
      if (!on_list[ino]) {
        c->Problem(fmt::format("inode {} (mode {:o}, {} links) is in no directory and on no unlinked "
                               "list",
                               ino, info.mode, info.nlink));
        if (!c->options.clear_and_reconnect) continue;
        if (!named_by_lost[ino]) c->orphans.push_back({ino, r->problems.size() - 1});
        else c->mount_repairable.insert(r->problems.size() - 1);
      }
      continue;
    }
    if (info.links_found != info.nlink) {
      c->Problem(fmt::format("inode {} has link count {} but {} links were found", ino, info.nlink, info.links_found));
      // Not one on an unlinked list: the next mount frees those.
      if (!on_list[ino]) c->relink.push_back({ino, r->problems.size() - 1});
    }
  }
}

// -y's repair of the link counts CheckUnlinked found wrong: each inode gets
// the links found to it.  One that cannot be rewritten stays reported.
void SetFoundLinkCounts(Context* c) {
  for (const auto& [ino, problem] : c->relink) {
    const std::uint32_t found = c->inodes[ino].links_found;
    if (c->RewriteInode(ino, [&](InodeCore* n) {
          n->nlink = found;
          return Status::Ok();
        }).ok())
      c->Repaired(problem, fmt::format("set to {}", found));
  }
}

}  // namespace walfs::fs::fsck
