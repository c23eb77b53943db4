#include "mount/sync_file.h"

#include <chrono>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace walfs::mount {
namespace {

// What the file reports; shared by the read and write callbacks.
struct SyncRecord {
  std::mutex mu;
  std::uint64_t syncs = 0;   // writes whose sync succeeded
  std::uint64_t failed = 0;  // writes whose sync returned an error
  std::time_t last = 0;      // when the last successful one ended (0: never)
  std::string last_error;    // the last failure, "" if none
};

std::string UtcTime(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Text(const SyncRecord& r) {
  std::string out =
      "Write anything here (walfs sync MOUNTPOINT does): the write returns once every change\n"
      "made before it is durable -- the log forced, the image flushed -- or fails with the\n"
      "error.  sync(2) and syncfs(2) never reach a FUSE daemon; this file and fsync do.\n";
  out += fmt::format("syncs {}\nfailed {}\nlast_sync {}\n", r.syncs, r.failed,
                     r.last == 0 ? std::string("never") : UtcTime(r.last));
  if (!r.last_error.empty()) out += fmt::format("last_error {}\n", r.last_error);
  return out;
}

}  // namespace

ControlDir::Sources::File SyncControlFile(std::function<Status()> sync) {
  auto record = std::make_shared<SyncRecord>();
  return {.name = std::string(kSyncFileName),
          .read =
              [record] {
                std::lock_guard l(record->mu);
                return Text(*record);
              },
          // The value written does not matter (`echo > sync`, `echo 1 > sync`).
          .write =
              [record, sync = std::move(sync)](std::string_view) -> Status {
                // Not under record->mu: syncs run concurrently and share log forces.
                const Status s = sync();
                std::lock_guard l(record->mu);
                if (s.ok()) {
                  ++record->syncs;
                  record->last = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
                } else {
                  ++record->failed;
                  record->last_error = s.ToString();
                }
                return s;
              },
          .snapshot = false,
          .help = "write anything: returns once every earlier change is durable (walfs sync MNT;\n"
                  "                      sync(2) never reaches a FUSE daemon)"};
}

}  // namespace walfs::mount
