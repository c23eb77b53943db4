// Workload: a POSIX workload run through walfs::fs::Filesystem on a fresh
// 16 MiB image over a RecordingDevice, keeping the History a Checker needs.
// Subclasses choose the operations (RandomWorkload, ShortWorkload); this
// class performs each one, the way the kernel would issue it (holding a
// lookup on what it operates on, forgetting inodes), and records it.
//
//   RandomWorkload w(seed, {.ops = 400});
//   WALFS_RETURN_IF_ERROR(w.Run());     // ends in a crash: never unmounted
//   Checker checker(w.history());
//   ... crash states from w.recording() ...
//
// An operation that fails is a bug in walfs or in the workload: Run()
// returns it, with the operation, and stops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/block_device_memory.h"
#include "base/block_device_recording.h"
#include "base/status.h"
#include "crash/history.h"
#include "fs/filesystem.h"

namespace walfs::crash {

constexpr std::uint64_t kImageBytes = 16ull << 20;  // every crash state copies it: small keeps runs short
constexpr std::uint64_t kMaxFileSize = 192 * 1024;

class Workload {
 public:
  virtual ~Workload();
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  // mkfs (smallest log), mount over the recording, Body(), then destroy the
  // filesystem without unmounting: the log halts where it is.  `discard`:
  // mount with online discard (MountOptions::discard), so that the crash
  // states hold the discards (zeros) of every free whose checkpoint was on
  // disk.
  Status Run(bool discard = false);

  const History& history() const { return h_; }
  const RecordingDevice& recording() const { return *rec_; }
  // How many operations ran (the log's length).
  std::size_t op_count() const { return h_.log.size(); }

 protected:
  Workload(std::uint64_t seed, bool low_lsn);
  virtual Status Body() = 0;

  // Directories are indices into h_.dirs (0 is the root), files into h_.files.
  struct Entry {
    bool dir;
    int id;
  };

  Result<int> Create(int dir, const std::string& name);
  Result<int> Symlink(int dir, const std::string& name, std::size_t target_len);
  Result<int> MakeDir(int parent, const std::string& name);
  Status Write(int fid, std::uint64_t off, std::uint64_t len);
  Status Truncate(int fid, std::uint64_t to);
  // fallocate(2) of [off, off + len): mode 0 (the size grows to the end) or
  // FALLOC_FL_KEEP_SIZE.  The bytes do not change; what is allocated reads
  // as zeros until a write (an unwritten extent, docs/fs.md "Data").
  Status Fallocate(int fid, std::uint64_t off, std::uint64_t len, bool keep_size);
  // Renames src to dst (over a file there unless `flags` says otherwise);
  // RENAME_EXCHANGE swaps two files.  A file renamed over that has no name
  // left is forgotten when `drop_victim`.  Names are taken by value: callers
  // pass names held in the model, which the operation erases.
  Status Rename(Name src, Name dst, unsigned flags, bool drop_victim);
  Status Link(int fid, const Name& dst);
  Status Unlink(Name n, bool drop_if_unnamed);
  Status Rmdir(int dir);
  Status SetXattr(int fid, const std::string& key, std::size_t len);
  Status RemoveXattr(int fid, const std::string& key);
  Status Fsync(int fid, bool datasync);
  Status FsyncDir(int dir, bool datasync);
  // The kernel drops the inode: an unlinked one is freed.
  void Forget(int fid);

  // Queries on the model.
  std::vector<int> LiveDirs() const;
  std::vector<int> Files(bool regular_only, bool named_only) const;
  std::vector<Name> EntriesOf(std::uint64_t dir_ino) const;
  std::optional<Entry> EntryAt(const Name& n) const;
  bool Below(int dir, std::uint64_t ino) const;  // is `ino` dir or inside it?
  std::size_t Now() const { return rec_->op_count(); }

  History h_;
  std::map<Name, Entry> ns_;

 private:
  // The kernel holds a lookup on whatever it operates on.
  Status Hold(File& f);
  void Changed(File& f, std::size_t start, bool zeroes = false, bool removes = false);
  void Unnamed(File& f, const Name& n, std::size_t start, bool drop);
  void Log(std::size_t start, std::string text, std::vector<std::uint64_t> touched, bool names_changed,
           std::uint64_t fsynced = 0);
  std::uint64_t InoOf(const Entry& e) const;

  std::unique_ptr<MemoryDevice> disk_;
  std::unique_ptr<RecordingDevice> rec_;
  std::unique_ptr<fs::Filesystem> fs_;
};

}  // namespace walfs::crash
