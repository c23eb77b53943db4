// `walfs sync PATH...`: makes the walfs mount each PATH is on durable --
// the kernel's cached writes started towards the daemon (syncfs), then the
// log forced and the image flushed through MOUNTPOINT/.walfs/sync
// (mount/sync_client.h) -- and returns once that is done.  sync(1) cannot:
// sync(2) never reaches a FUSE daemon.  Exit 0 when every PATH was synced,
// 1 when one is not on walfs or its sync failed (one line each on stderr),
// 2 for a usage error.
#pragma once

namespace walfs::tools {

// argv[0] is "sync".
int SyncMain(int argc, char** argv);

}  // namespace walfs::tools
