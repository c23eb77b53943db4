// RunForked: one hostile round in a forked child, so that a crash or a hang
// is counted with its seed instead of ending the campaign (walfs-hostile and
// its --repair mode share it).
#pragma once

#include <functional>

namespace walfs::hostile {

enum class Fate { kFinished, kCrashed, kHung };

// Runs `round` in a child, which exits 0 after it, and waits up to
// timeout_s.  kHung: the child was killed at the deadline.  kCrashed: it
// died of a signal (*signo, 0 otherwise), exited non-zero, or exited
// without setting *done -- the round's results travel in shared memory
// (MAP_SHARED) and *done is the last thing it writes.  Else kFinished.
Fate RunForked(const std::function<void()>& round, const bool* done, double timeout_s, int* signo);

}  // namespace walfs::hostile
