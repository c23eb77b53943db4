// The B+tree's algorithms over the node format (fs/format/btree_format.h),
// one concept past STYLE.md's 600 lines: lookup and scans, insert with
// splits, erase with the collapse of emptied nodes, and the teardown share
// the path of steps and the node checks below, and each reads only beside
// the others (as XFS's libxfs/xfs_btree.c is one file).
//
// Paths.  Every operation walks from the root to one leaf, choosing in each
// internal node the entry with the largest key <= the search key (entry 0
// when the key is below every entry).  Each node on the way is checked
// against what its parent promises: its level, its owner, and keys inside
// the range [entry key, next entry key) the parent gave it -- so a
// misdirected pointer or a stale block is Corruption, not a wrong answer.
//
// Changes hold (FsTransaction::Hold) every node of the path, decide what
// will happen (which nodes split or empty, whether the tree grows past
// max_levels, which blocks to allocate) and only then change bytes.
#include "fs/btree.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/check.h"
#include "fs/format/btree_format.h"

namespace walfs::fs {

namespace {

using format::BtreeKey;
using Records = std::vector<std::pair<std::uint64_t, std::string>>;
using Entries = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
using Options = Btree::Options;

// The bytes of a node whose buffer lock the caller has, directly or
// through a transaction that holds the buffer.
std::span<std::byte> Bytes(const BufRef& b) NO_THREAD_SAFETY_ANALYSIS { return b->data(); }
std::uint16_t Nrecs(const BufRef& b) { return format::DecodeBtreeNodeHeader(Bytes(b)).nrecs; }

// A reader's view of a node: the buffer lock for the scope, unless the
// reader's own transaction holds the buffer already.
class NodeReadLock {
 public:
  NodeReadLock(const BufRef& buf, const FsTransaction* tx) NO_THREAD_SAFETY_ANALYSIS
      : buf_(buf), locked_(tx == nullptr || !tx->Holds(buf)) {
    if (locked_) buf_->Lock();
  }
  ~NodeReadLock() NO_THREAD_SAFETY_ANALYSIS {
    if (locked_) buf_->Unlock();
  }
  NodeReadLock(const NodeReadLock&) = delete;
  NodeReadLock& operator=(const NodeReadLock&) = delete;
  std::span<const std::byte> data() const { return Bytes(buf_); }

 private:
  const BufRef& buf_;
  const bool locked_;
};

// Keys a node may hold: [lo, hi), each bound absent at the tree's edges.
struct KeyRange {
  std::optional<std::uint64_t> lo, hi;
};

Status Bad(const Options& o, std::uint64_t blkno, std::string_view why) {
  Status s = Status::Corruption(fmt::format("{} B+tree of inode {}: block {}: {}",
                                            format::BlockTypeName(o.type), o.owner, blkno, why));
  if (o.cache != nullptr) o.cache->ReportDamage(fmt::format("{} B+tree", format::BlockTypeName(o.type)), o.owner, blkno, s);
  return s;
}

Result<BufRef> ReadNode(const Options& o, std::uint64_t blkno) {
  // A pointer outside the data area is the tree's corruption, not a bad
  // argument of whoever asked.
  if (blkno < o.sb->data_start() || blkno >= o.sb->total_blocks)
    return Bad(o, blkno, "the pointer is outside the data area");
  return o.cache->Read(blkno, o.type);
}

// What the parent promised about a node (the cache verified its layout).
Status CheckNode(const Options& o, std::span<const std::byte> d, std::uint64_t blkno,
                 std::uint32_t level, const KeyRange& range) {
  const format::BtreeNodeHeader h = format::DecodeBtreeNodeHeader(d);
  if (h.level != level || h.magic != (level == 0 ? format::kBtreeLeafMagic : format::kBtreeNodeMagic))
    return Bad(o, blkno, fmt::format("a {} at level {} where level {} belongs",
                                     format::MagicString(h.magic), h.level, level));
  if (h.owner != o.owner) return Bad(o, blkno, fmt::format("owned by {}", h.owner));
  if (h.nrecs == 0) return Bad(o, blkno, "empty");
  const std::uint64_t first = BtreeKey(d, 0), last = BtreeKey(d, h.nrecs - 1u);
  if ((range.lo && first < *range.lo) || (range.hi && last >= *range.hi))
    return Bad(o, blkno, fmt::format("keys [{}, {}] outside the range [{}, {}) of its parent entry", first,
                                     last, range.lo.value_or(0), range.hi ? fmt::format("{}", *range.hi) : "max"));
  return Status::Ok();
}

// The entry of an internal node to follow for `key`, and the range it gives
// its child.  `floor_lo` becomes the entry's key if that is <= key.
std::uint32_t Choose(std::span<const std::byte> d, std::uint64_t key, KeyRange* range,
                     std::optional<std::uint64_t>* floor_lo) {
  const std::uint32_t n = format::DecodeBtreeNodeHeader(d).nrecs;
  std::uint32_t i = format::BtreeLowerBound(d, key);
  if (i == n || BtreeKey(d, i) != key) i = i == 0 ? 0 : i - 1;
  if (BtreeKey(d, i) <= key && floor_lo) *floor_lo = BtreeKey(d, i);
  range->lo = BtreeKey(d, i);
  if (i + 1 < n) range->hi = BtreeKey(d, i + 1);
  return i;
}

// ---- Readers ----

struct LeafHit {
  BufRef buf;
  KeyRange range;                         // the leaf's
  std::optional<std::uint64_t> floor_lo;  // every key left of the leaf is below this
};

Result<LeafHit> FindLeaf(const Options& o, const BtreeRoot& root, std::uint64_t key,
                         const FsTransaction* tx) {
  LeafHit hit;
  std::uint64_t blkno = root.block;
  for (std::uint32_t level = root.levels; level-- > 0;) {
    WALFS_ASSIGN_OR_RETURN(BufRef buf, ReadNode(o, blkno));
    NodeReadLock l(buf, tx);
    WALFS_RETURN_IF_ERROR(CheckNode(o, l.data(), blkno, level, hit.range));
    if (level == 0) {
      hit.buf = buf;  // a copy: the lock above still refers to buf
      return hit;
    }
    blkno = format::BtreeChild(l.data(), Choose(l.data(), key, &hit.range, &hit.floor_lo));
  }
  return Bad(o, root.block, fmt::format("a root of {} levels", root.levels));
}

// ---- Writers ----

struct Step {
  BufRef buf;
  std::uint32_t index = 0;  // the entry followed; in the leaf, the key's lower bound
  bool was_held = false;    // the transaction held it before this call
};

// The path a change works on.  Nodes it did not change are released when
// it goes (a changed node is logged, and Release leaves it held).
class Path {
 public:
  explicit Path(FsTransaction* tx) : tx_(tx) {}
  ~Path() {
    for (const Step& s : steps_)
      if (!s.was_held) tx_->Release(s.buf);
  }
  Path(const Path&) = delete;
  Path& operator=(const Path&) = delete;
  std::vector<Step>& steps() { return steps_; }
  Step& leaf() { return steps_.back(); }

 private:
  FsTransaction* const tx_;
  std::vector<Step> steps_;
};

// Holds and checks the root-to-leaf path for `key` (nullopt: the rightmost).
Status Descend(const Options& o, FsTransaction* tx, const BtreeRoot& root,
               std::optional<std::uint64_t> key, Path* path) {
  KeyRange range;
  std::uint64_t blkno = root.block;
  for (std::uint32_t level = root.levels; level-- > 0;) {
    WALFS_ASSIGN_OR_RETURN(BufRef buf, ReadNode(o, blkno));
    const bool was_held = tx->Holds(buf);
    tx->Hold(buf);
    path->steps().push_back(Step{buf, 0, was_held});
    const std::span<const std::byte> d = Bytes(buf);
    WALFS_RETURN_IF_ERROR(CheckNode(o, d, blkno, level, range));
    const std::uint32_t n = format::DecodeBtreeNodeHeader(d).nrecs;
    if (level == 0) {
      path->leaf().index = key ? format::BtreeLowerBound(d, *key) : n;
      return Status::Ok();
    }
    std::uint32_t i = n - 1;
    if (key) {
      i = Choose(d, *key, &range, nullptr);
    } else {
      range.lo = BtreeKey(d, i);
    }
    path->steps().back().index = i;
    blkno = format::BtreeChild(d, i);
  }
  return Bad(o, root.block, fmt::format("a root of {} levels", root.levels));
}

void Log(FsTransaction* tx, const BufRef& buf, const format::ByteRanges& ranges) {
  for (const auto& [first, last] : ranges) tx->LogRange(buf, first, last);
}
void LogBody(FsTransaction* tx, const BufRef& buf) {
  tx->LogRange(buf, format::kBtreeLevelOffset, buf->block_size() - 1);
}

format::BtreeNodeId NodeId(const Options& o, std::uint64_t blkno) {
  return format::BtreeNodeId{.blkno = blkno, .owner = o.owner, .uuid = o.sb->metadata_uuid()};
}

// A node leaves the tree: cancelled (never written back, and recovery
// ignores its earlier logged versions), joined to tx, and freed.
Status FreeNode(const Options& o, FsTransaction* tx, const BufRef& buf) NO_THREAD_SAFETY_ANALYSIS {
  tx->Hold(buf);
  tx->LogRange(buf, 0, 0);  // joins it; the cancel below drops the chunk
  buf->MarkCancelled();
  return o.alloc->Free(tx, buf->blkno(), 1);
}

// `count` new nodes, held and ready to be written whole.  Blocks are all
// allocated before any buffer is looked up, so a failure leaves nothing
// behind but the allocator's undone changes.
Result<std::vector<BufRef>> NewNodes(const Options& o, FsTransaction* tx, std::uint32_t count) {
  if (count > 0 && !o.may_allocate)
    return Status::NoSpace(fmt::format("the B+tree of inode {} needs a new node and may not allocate one", o.owner));
  std::vector<std::uint64_t> blocks;
  Status s;
  for (std::uint32_t i = 0; i < count && s.ok(); ++i) {
    Result<format::Extent> e = o.alloc->Alloc(tx, {.goal = o.goal});
    if (e.ok()) blocks.push_back(e->disk_block);
    else s = e.status();
  }
  std::vector<BufRef> bufs;
  for (std::size_t i = 0; i < blocks.size() && s.ok(); ++i) {
    Result<BufRef> b = o.cache->Get(blocks[i], o.type);
    if (b.ok()) bufs.push_back(std::move(b).value());
    else s = b.status();
  }
  if (!s.ok()) {
    for (std::uint64_t b : blocks) WALFS_RETURN_IF_ERROR(o.alloc->Free(tx, b, 1));
    return s;
  }
  for (const BufRef& b : bufs) tx->Hold(b);
  return bufs;
}

// Where to cut a leaf's records so that both halves fit: about half the
// bytes each.  Records are at most a third of a leaf (BtreeMaxValueSize),
// so the cut below the byte midpoint always leaves both sides fitting.
std::size_t LeafSplitPoint(const Records& records, std::uint32_t block_size) {
  std::uint64_t total = 0;
  for (const auto& r : records) total += format::BtreeRecordCost(r.second.size());
  std::uint64_t prefix = 0;
  std::size_t m = 0;
  while (m < records.size() && 2 * (prefix + format::BtreeRecordCost(records[m].second.size())) <= total)
    prefix += format::BtreeRecordCost(records[m++].second.size());
  m = std::max<std::size_t>(m, 1);
  // Invariant: both halves are non-empty and fit in a leaf.
  WALFS_CHECK(m < records.size() && prefix <= format::BtreeLeafSpace(block_size) &&
              total - prefix <= format::BtreeLeafSpace(block_size));
  return m;
}

// Puts `records` (too many for one leaf) in the path's leaf and a new one,
// and the separator into the parents, splitting each full one in turn;
// `fresh` holds the new nodes, one a split and one for a new root.
void SplitUp(const Options& o, FsTransaction* tx, BtreeRoot* root, std::vector<Step>& steps,
             Records records, const std::vector<BufRef>& fresh) {
  const std::uint32_t bs = o.sb->block_size;
  std::size_t next = 0;
  const std::size_t m = LeafSplitPoint(records, bs);
  const Records right(std::make_move_iterator(records.begin() + static_cast<std::ptrdiff_t>(m)),
                      std::make_move_iterator(records.end()));
  records.resize(m);
  format::RewriteBtreeLeaf(Bytes(steps.back().buf), records);
  LogBody(tx, steps.back().buf);
  const BufRef& leaf = fresh[next++];
  format::EncodeBtreeLeaf(Bytes(leaf), NodeId(o, leaf->blkno()), right);
  tx->LogRange(leaf, 0, bs - 1);
  std::pair<std::uint64_t, std::uint64_t> carry{right.front().first, leaf->blkno()};

  for (std::size_t l = steps.size() - 1; l-- > 0;) {
    const BufRef& node = steps[l].buf;
    const std::uint32_t at = steps[l].index + 1;
    if (Nrecs(node) < format::BtreeNodeCapacity(bs)) {
      Log(tx, node, format::BtreeNodeInsert(Bytes(node), at, carry.first, carry.second));
      return;
    }
    Entries entries = format::BtreeEntries(Bytes(node));
    entries.insert(entries.begin() + at, carry);
    const auto level = static_cast<std::uint16_t>(steps.size() - 1 - l);
    const std::size_t half = entries.size() / 2;
    const Entries upper(entries.begin() + static_cast<std::ptrdiff_t>(half), entries.end());
    entries.resize(half);
    format::RewriteBtreeInternal(Bytes(node), level, entries);
    LogBody(tx, node);
    const BufRef& sibling = fresh[next++];
    format::EncodeBtreeInternal(Bytes(sibling), NodeId(o, sibling->blkno()), level, upper);
    tx->LogRange(sibling, 0, bs - 1);
    carry = {upper.front().first, sibling->blkno()};
  }
  // The root split: a new root above the two halves.
  const BufRef& top = fresh[next++];
  const Entries entries{{BtreeKey(Bytes(steps.front().buf), 0), root->block}, carry};
  format::EncodeBtreeInternal(Bytes(top), NodeId(o, top->blkno()), root->levels, entries);
  tx->LogRange(top, 0, bs - 1);
  *root = BtreeRoot{top->blkno(), static_cast<std::uint8_t>(root->levels + 1)};
}

// Inserts (or, with `replace`, replaces) the record at the path's leaf.
Status PutRecord(const Options& o, FsTransaction* tx, BtreeRoot* root, Path* path,
                 std::uint64_t key, std::string_view value, bool replace) {
  std::vector<Step>& steps = path->steps();
  const BufRef& leaf = path->leaf().buf;
  const std::uint32_t i = path->leaf().index;
  const std::uint32_t bs = o.sb->block_size;
  std::uint32_t room = format::BtreeLeafFree(Bytes(leaf));
  if (replace) room += format::BtreeRecordCost(format::BtreeValue(Bytes(leaf), i).size());
  const bool split = room < format::BtreeRecordCost(value.size());
  // How far up the splits go, and whether the tree grows: all known
  // before anything changes.
  std::uint32_t new_nodes = 0;
  if (split) {
    new_nodes = 1;
    std::size_t l = steps.size() - 1;
    while (l > 0 && Nrecs(steps[l - 1].buf) == format::BtreeNodeCapacity(bs)) {
      ++new_nodes;
      --l;
    }
    if (l == 0) {
      if (root->levels + 1u > o.max_levels)
        return Status::NoSpace(fmt::format("the B+tree of inode {} is at its height limit of {}",
                                           o.owner, o.max_levels));
      ++new_nodes;
    }
  }
  WALFS_ASSIGN_OR_RETURN(std::vector<BufRef> fresh, NewNodes(o, tx, new_nodes));
  // A new smallest key of a subtree lowers the entry keys on its way down
  // (Choose took entry 0 for it), keeping "entry key <= every key below".
  if (!replace)
    for (std::size_t l = 0; l + 1 < steps.size(); ++l)
      if (steps[l].index == 0 && key < BtreeKey(Bytes(steps[l].buf), 0))
        Log(tx, steps[l].buf, format::BtreeNodeSetKey(Bytes(steps[l].buf), 0, key));
  if (!split) {
    Log(tx, leaf, replace ? format::BtreeLeafReplace(Bytes(leaf), i, value)
                          : format::BtreeLeafInsert(Bytes(leaf), i, key, value));
    return Status::Ok();
  }
  Records records = format::BtreeLeafRecords(Bytes(leaf));
  if (replace) records[i].second = value;
  else records.insert(records.begin() + i, {key, std::string(value)});
  SplitUp(o, tx, root, steps, std::move(records), fresh);
  return Status::Ok();
}


// Where the root goes after an erase that leaves steps[s] as the highest
// node still there (it loses the entry or record at steps[s].index): down
// through every internal node left with a single entry.  Those nodes are
// appended to `collapsed`, to be freed; nodes off the path are read now,
// before anything changes.
Status PlanCollapse(const Options& o, FsTransaction* tx, const BtreeRoot& root,
                    std::vector<Step>& steps, std::size_t s, std::vector<BufRef>* collapsed,
                    BtreeRoot* new_root) {
  *new_root = root;
  BufRef node = steps[0].buf;
  for (std::size_t k = 0; new_root->levels > 1; ++k) {
    std::uint64_t child = 0;
    if (k < s) {  // on the path, unchanged: its one entry leads to steps[k + 1]
      if (Nrecs(node) != 1) break;
      child = steps[k + 1].buf->blkno();
    } else if (k == s) {  // loses one entry: the other one is left
      if (Nrecs(node) != 2) break;
      child = format::BtreeChild(Bytes(node), steps[s].index == 0 ? 1 : 0);
    } else {  // below the path, not held
      NodeReadLock l(node, tx);
      if (format::DecodeBtreeNodeHeader(l.data()).nrecs != 1) break;
      child = format::BtreeChild(l.data(), 0);
    }
    collapsed->push_back(node);
    if (k < s) {
      node = steps[k + 1].buf;
    } else {
      WALFS_ASSIGN_OR_RETURN(node, ReadNode(o, child));
      NodeReadLock l(node, tx);
      WALFS_RETURN_IF_ERROR(CheckNode(o, l.data(), child, new_root->levels - 2u, KeyRange{}));
    }
    *new_root = BtreeRoot{child, static_cast<std::uint8_t>(new_root->levels - 1)};
  }
  return Status::Ok();
}

// The highest node on the path that survives losing what is below it: the
// nodes under it are freed (each had only the path's child).  -1: none.
std::ptrdiff_t Survivor(std::vector<Step>& steps, std::ptrdiff_t from) {
  std::ptrdiff_t s = from;
  while (s >= 0 && Nrecs(steps[static_cast<std::size_t>(s)].buf) == 1) --s;
  return s;
}

Status FreeNodes(const Options& o, FsTransaction* tx, std::vector<Step>& steps, std::size_t from) {
  for (std::size_t k = from; k < steps.size(); ++k) WALFS_RETURN_IF_ERROR(FreeNode(o, tx, steps[k].buf));
  return Status::Ok();
}

// Removes entry or record `index` of a node.
void RemoveAt(FsTransaction* tx, const Step& step) {
  const bool leaf = format::DecodeBtreeNodeHeader(Bytes(step.buf)).level == 0;
  Log(tx, step.buf, leaf ? format::BtreeLeafRemove(Bytes(step.buf), step.index)
                         : format::BtreeNodeRemove(Bytes(step.buf), step.index));
}
}  // namespace

std::size_t Btree::MaxValueSize(std::uint32_t block_size) { return format::BtreeMaxValueSize(block_size); }

Result<std::optional<std::string>> Btree::Get(const BtreeRoot& root, std::uint64_t key,
                                              const FsTransaction* tx) const {
  if (root.empty()) return std::optional<std::string>();
  WALFS_ASSIGN_OR_RETURN(LeafHit hit, FindLeaf(options_, root, key, tx));
  NodeReadLock l(hit.buf, tx);
  const std::uint32_t i = format::BtreeLowerBound(l.data(), key);
  if (i == format::DecodeBtreeNodeHeader(l.data()).nrecs || BtreeKey(l.data(), i) != key)
    return std::optional<std::string>();
  return std::optional<std::string>(format::BtreeValue(l.data(), i));
}

Result<std::optional<BtreeRecord>> Btree::Floor(const BtreeRoot& root, std::uint64_t key,
                                                const FsTransaction* tx) const {
  if (root.empty()) return std::optional<BtreeRecord>();
  // The leaf for `key` may hold only larger keys (its smallest were erased,
  // or key is below the whole subtree): then the answer is the largest key
  // left of it, below floor_lo.  floor_lo <= key, so each retry looks
  // strictly further left.
  for (;;) {
    WALFS_ASSIGN_OR_RETURN(LeafHit hit, FindLeaf(options_, root, key, tx));
    {
      NodeReadLock l(hit.buf, tx);
      const std::uint32_t n = format::DecodeBtreeNodeHeader(l.data()).nrecs;
      std::uint32_t i = format::BtreeLowerBound(l.data(), key);
      if (i < n && BtreeKey(l.data(), i) == key) ++i;
      if (i > 0)
        return std::optional<BtreeRecord>(
            BtreeRecord{BtreeKey(l.data(), i - 1), std::string(format::BtreeValue(l.data(), i - 1))});
    }
    if (!hit.floor_lo || *hit.floor_lo == 0) return std::optional<BtreeRecord>();
    WALFS_CHECK(*hit.floor_lo <= key);
    key = *hit.floor_lo - 1;
  }
}

Status Btree::Scan(const BtreeRoot& root, std::uint64_t from,
                   const std::function<bool(std::uint64_t key, std::string_view value)>& fn,
                   const FsTransaction* tx) const {
  if (root.empty()) return Status::Ok();
  // Leaf by leaf: a leaf's range ends where the next one's begins, and that
  // bound (> from) is where the next descent starts.  Each leaf is copied
  // whole under its lock (one memcpy; fn runs without the lock, and most
  // callers stop after a record or two, so copying records one by one
  // cost an allocation per record never looked at).
  std::vector<std::byte> copy;
  for (;;) {
    WALFS_ASSIGN_OR_RETURN(LeafHit hit, FindLeaf(options_, root, from, tx));
    {
      NodeReadLock l(hit.buf, tx);
      copy.assign(l.data().begin(), l.data().end());
    }
    const std::span<const std::byte> leaf(copy);
    const std::uint32_t n = format::DecodeBtreeNodeHeader(leaf).nrecs;
    for (std::uint32_t i = format::BtreeLowerBound(leaf, from); i < n; ++i)
      if (!fn(BtreeKey(leaf, i), format::BtreeValue(leaf, i))) return Status::Ok();
    if (!hit.range.hi) return Status::Ok();
    WALFS_CHECK(*hit.range.hi > from);
    from = *hit.range.hi;
  }
}

Status Btree::ScanFromFloor(const BtreeRoot& root, std::uint64_t key,
                            const std::function<bool(std::uint64_t key, std::string_view value)>& fn,
                            const FsTransaction* tx) const {
  if (root.empty()) return Status::Ok();
  WALFS_ASSIGN_OR_RETURN(LeafHit hit, FindLeaf(options_, root, key, tx));
  std::vector<std::byte> copy;
  {
    NodeReadLock l(hit.buf, tx);
    copy.assign(l.data().begin(), l.data().end());
  }
  const std::span<const std::byte> leaf(copy);
  const std::uint32_t n = format::DecodeBtreeNodeHeader(leaf).nrecs;
  std::uint32_t i = format::BtreeLowerBound(leaf, key);
  if (i < n && BtreeKey(leaf, i) == key) ++i;
  if (i == 0) {
    // Every key here is above `key`: the floor, if any, is further left.
    WALFS_ASSIGN_OR_RETURN(std::optional<BtreeRecord> floor, Floor(root, key, tx));
    return Scan(root, floor ? floor->key : key, fn, tx);
  }
  // Keys in later leaves are >= this leaf's upper bound > key: record i - 1
  // is the floor.
  for (std::uint32_t j = i - 1; j < n; ++j)
    if (!fn(BtreeKey(leaf, j), format::BtreeValue(leaf, j))) return Status::Ok();
  if (!hit.range.hi) return Status::Ok();
  return Scan(root, *hit.range.hi, fn, tx);
}

Status Btree::ForEachBlock(const BtreeRoot& root, const std::function<void(std::uint64_t block)>& fn,
                           const FsTransaction* tx) const {
  if (root.empty()) return Status::Ok();
  struct Pending {
    std::uint64_t blkno;
    std::uint32_t level;
    KeyRange range;
  };
  if (root.levels == 0) return Bad(options_, root.block, "a root of 0 levels");
  std::vector<Pending> stack{{root.block, root.levels - 1u, {}}};
  while (!stack.empty()) {
    const Pending p = stack.back();
    stack.pop_back();
    WALFS_ASSIGN_OR_RETURN(BufRef buf, ReadNode(options_, p.blkno));
    NodeReadLock l(buf, tx);
    WALFS_RETURN_IF_ERROR(CheckNode(options_, l.data(), p.blkno, p.level, p.range));
    fn(p.blkno);
    if (p.level == 0) continue;
    const std::uint32_t n = format::DecodeBtreeNodeHeader(l.data()).nrecs;
    for (std::uint32_t i = n; i-- > 0;) {
      KeyRange r{BtreeKey(l.data(), i), i + 1 < n ? std::optional(BtreeKey(l.data(), i + 1)) : p.range.hi};
      stack.push_back({format::BtreeChild(l.data(), i), p.level - 1, r});
    }
  }
  return Status::Ok();
}

Status Btree::Insert(FsTransaction* tx, BtreeRoot* root, std::uint64_t key, std::string_view value) {
  const Options& o = options_;
  if (value.size() > MaxValueSize(o.sb->block_size))
    return Status::InvalidArgument(fmt::format("a {}-byte B+tree value (at most {})", value.size(),
                                               MaxValueSize(o.sb->block_size)));
  WALFS_CHECK(o.max_levels >= 1 && o.max_levels <= format::kBtreeMaxLevel);
  if (root->empty()) {
    WALFS_ASSIGN_OR_RETURN(std::vector<BufRef> fresh, NewNodes(o, tx, 1));
    const Records records{{key, std::string(value)}};
    format::EncodeBtreeLeaf(Bytes(fresh[0]), NodeId(o, fresh[0]->blkno()), records);
    tx->LogRange(fresh[0], 0, o.sb->block_size - 1);
    *root = BtreeRoot{fresh[0]->blkno(), 1};
    return Status::Ok();
  }
  Path path(tx);
  WALFS_RETURN_IF_ERROR(Descend(o, tx, *root, key, &path));
  const std::span<const std::byte> leaf = Bytes(path.leaf().buf);
  const std::uint32_t i = path.leaf().index;
  if (i < format::DecodeBtreeNodeHeader(leaf).nrecs && BtreeKey(leaf, i) == key)
    return Status::AlreadyExists(fmt::format("key {} is in the B+tree of inode {}", key, o.owner));
  return PutRecord(o, tx, root, &path, key, value, /*replace=*/false);
}

Status Btree::Replace(FsTransaction* tx, BtreeRoot* root, std::uint64_t key, std::string_view value) {
  const Options& o = options_;
  if (value.size() > MaxValueSize(o.sb->block_size))
    return Status::InvalidArgument(fmt::format("a {}-byte B+tree value (at most {})", value.size(),
                                               MaxValueSize(o.sb->block_size)));
  if (root->empty()) return Status::NotFound(fmt::format("key {}: the B+tree is empty", key));
  Path path(tx);
  WALFS_RETURN_IF_ERROR(Descend(o, tx, *root, key, &path));
  const std::span<const std::byte> leaf = Bytes(path.leaf().buf);
  const std::uint32_t i = path.leaf().index;
  if (i == format::DecodeBtreeNodeHeader(leaf).nrecs || BtreeKey(leaf, i) != key)
    return Status::NotFound(fmt::format("key {} is not in the B+tree of inode {}", key, o.owner));
  return PutRecord(o, tx, root, &path, key, value, /*replace=*/true);
}

Status Btree::Erase(FsTransaction* tx, BtreeRoot* root, std::uint64_t key) {
  const Options& o = options_;
  if (root->empty()) return Status::NotFound(fmt::format("key {}: the B+tree is empty", key));
  Path path(tx);
  WALFS_RETURN_IF_ERROR(Descend(o, tx, *root, key, &path));
  std::vector<Step>& steps = path.steps();
  const std::span<const std::byte> leaf = Bytes(path.leaf().buf);
  const std::uint32_t i = path.leaf().index;
  if (i == format::DecodeBtreeNodeHeader(leaf).nrecs || BtreeKey(leaf, i) != key)
    return Status::NotFound(fmt::format("key {} is not in the B+tree of inode {}", key, o.owner));
  const std::ptrdiff_t s = Survivor(steps, static_cast<std::ptrdiff_t>(steps.size()) - 1);
  if (s < 0) {  // the last record: the whole path goes, and the tree is empty
    WALFS_RETURN_IF_ERROR(FreeNodes(o, tx, steps, 0));
    *root = BtreeRoot{};
    return Status::Ok();
  }
  const auto survivor = static_cast<std::size_t>(s);
  std::vector<BufRef> collapsed;
  BtreeRoot new_root;
  WALFS_RETURN_IF_ERROR(PlanCollapse(o, tx, *root, steps, survivor, &collapsed, &new_root));
  // Nothing has changed up to here.  A survivor that collapses away is
  // freed, not edited.
  const bool survivor_collapses =
      std::any_of(collapsed.begin(), collapsed.end(),
                  [&](const BufRef& b) { return b.get() == steps[survivor].buf.get(); });
  if (!survivor_collapses) RemoveAt(tx, steps[survivor]);
  WALFS_RETURN_IF_ERROR(FreeNodes(o, tx, steps, survivor + 1));
  for (const BufRef& b : collapsed) WALFS_RETURN_IF_ERROR(FreeNode(o, tx, b));
  *root = new_root;
  return Status::Ok();
}

Result<bool> Btree::DestroySome(FsTransaction* tx, BtreeRoot* root, std::uint32_t max_blocks) {
  const Options& o = options_;
  std::uint32_t freed = 0;
  while (!root->empty() && max_blocks > 0) {
    // One step: the rightmost leaf, and every ancestor that was only its.
    Path path(tx);
    WALFS_RETURN_IF_ERROR(Descend(o, tx, *root, std::nullopt, &path));
    std::vector<Step>& steps = path.steps();
    const std::ptrdiff_t s = Survivor(steps, static_cast<std::ptrdiff_t>(steps.size()) - 2);
    const auto step_blocks = static_cast<std::uint32_t>(static_cast<std::ptrdiff_t>(steps.size()) - 1 - s);
    if (freed > 0 && freed + step_blocks > max_blocks) break;
    const auto first_freed = static_cast<std::size_t>(s + 1);
    if (s >= 0) RemoveAt(tx, steps[first_freed - 1]);
    WALFS_RETURN_IF_ERROR(FreeNodes(o, tx, steps, first_freed));
    if (s < 0) *root = BtreeRoot{};
    freed += step_blocks;
    if (freed >= max_blocks) break;
  }
  return root->empty();
}

}  // namespace walfs::fs
