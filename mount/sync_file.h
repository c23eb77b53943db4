// `/.walfs/sync`: the control file that makes a walfs mount durable, because
// sync(2) and syncfs(2) cannot (the kernel sends FUSE_SYNCFS to virtiofs
// only; an ordinary FUSE daemon never hears of either).  Writing anything to
// it runs `sync` -- the mount passes fs::Filesystem::Sync: the whole log
// forced, the device flushed -- and the write returns once that is done,
// with its error as an errno when it failed.  Reading it says what it does,
// how many syncs it ran and when the last one ended.
//
//   src.files.push_back(SyncControlFile([fs] { return fs->Sync(); }));
//
// `walfs sync MOUNTPOINT` (mount/sync_client.h) is the command that writes it.
#pragma once

#include <functional>

#include "base/status.h"
#include "mount/control_dir.h"

namespace walfs::mount {

inline constexpr std::string_view kSyncFileName = "sync";

// Concurrent writes each run `sync` (each one's changes are then durable:
// the log shares one force among them).
ControlDir::Sources::File SyncControlFile(std::function<Status()> sync);

}  // namespace walfs::mount
