// History: what a crash workload did, as the checker needs it -- every file
// and directory it made, every write (so each byte is explainable), every
// change after which a file may look different on disk, every fsync with the
// state it made durable, and the namespace after every operation that
// changed it.  Positions are recorded-device op counts
// (RecordingDevice::op_count()): "start" is the count when an operation
// began, "end" when it returned.  A crash at n (writes [0, n) may have
// landed) can show an operation only if its start < n.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace walfs::crash {

using Name = std::pair<std::uint64_t, std::string>;  // (parent inode, name)
using Xattrs = std::map<std::string, std::string>;
using Namespace = std::map<Name, std::uint64_t>;     // every name in the tree -> its inode

struct WriteRec {
  std::uint32_t gen;
  std::uint64_t off, len;
  std::size_t start;
};
// A change to a file after which it may look different on disk.
struct Change {
  std::size_t start;
  std::uint64_t size;    // its size afterwards
  bool zeroes = false;   // a truncate: bytes may read as zeros
  bool removes = false;  // lost a name (unlink, renamed over) or was freed
};
struct Synced {
  std::size_t end;  // when fsync returned
  std::string data;
  Xattrs xattrs;
  std::set<Name> names;
};
struct File {
  int fid = 0;
  std::uint64_t ino = 0;
  std::size_t created = 0;
  bool symlink = false;
  std::string target;  // a symlink's
  std::string data;
  Xattrs xattrs;
  std::set<Name> names;
  std::set<Name> all_names;  // every name it ever had
  std::vector<WriteRec> writes;
  std::vector<Change> changes;
  std::vector<Synced> fsyncs;
  std::map<std::string, std::set<std::string>> xattr_values;  // every value ever set
  std::uint64_t lookups = 0;
  bool dead = false;  // freed (no names, forgotten)
};
struct Dir {
  std::uint64_t ino = 0, parent = 0;
  std::size_t created = 0;
  std::uint64_t lookups = 0;
  bool live = true;
};
// One operation, for reports and for the namespace oracle.
struct OpRec {
  std::size_t start, end;
  std::string text;
  std::vector<std::uint64_t> touched;  // inodes whose metadata it surely logged
  std::uint64_t fsynced = 0;           // an fsync: the inode it forced
};
// The namespace right after log[op] returned (op = -1: before the first).
struct NamespaceState {
  std::ptrdiff_t op;
  Namespace names;
};

struct History {
  std::uint64_t seed = 0;
  bool low_lsn = false;
  std::vector<Dir> dirs;
  std::vector<File> files;
  std::vector<OpRec> log;
  std::vector<NamespaceState> namespaces;
  // Crash states before this recorded op are of no interest (the fixed
  // setup of a short workload); 0 for the random workload.
  std::size_t first_interesting_op = 0;
};

}  // namespace walfs::crash
