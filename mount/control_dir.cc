#include "mount/control_dir.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include <fmt/format.h>

#include "journal/wake_mode.h"
#include "mount/control_files.h"
#include "tracing/event.h"
#include "tracing/event_table.h"
#include "tracing/marker.h"
#include "tracing/raw_reader.h"
#include "tracing/reader.h"
#include "tracing/trace_file.h"
#include "tracing/text_format.h"

namespace walfs::mount {

namespace internal {

enum class Kind : std::uint8_t {
  kDir,            // .walfs, events, options
  kSubsystemDir,   // events/<subsystem>
  kEventDir,       // events/<subsystem>/<event>
  kReadme,
  kStats,
  kTrace,
  kTracePipe,
  kTracePipeRaw,
  kTracingOn,
  kAllEnable,        // events/enable
  kSubsystemEnable,  // events/<subsystem>/enable
  kEventEnable,      // events/<subsystem>/<event>/enable
  kEventFormat,      // events/<subsystem>/<event>/format
  kEventFilter,      // events/<subsystem>/<event>/filter
  kSetEvent,         // set_event
  kTraceMarker,      // trace_marker
  kOption,
  kExtra,  // one of Sources::files
};

}  // namespace internal

namespace {

using internal::Kind;

bool IsDir(Kind k) { return k == Kind::kDir || k == Kind::kSubsystemDir || k == Kind::kEventDir; }
bool IsPipe(Kind k) { return k == Kind::kTracePipe || k == Kind::kTracePipeRaw; }

// What one trace_pipe_raw read asks the rings for at least: small reads
// (dd bs=512) are served from the rest, as a pipe does.
constexpr std::size_t kRawBatchBytes = 256 << 10;


// The longest prefix of *text that is whole lines and at most `size` bytes
// (a first line longer than `size` is cut: nothing else could be returned).
std::string TakeLines(std::string* text, std::size_t size) {
  std::size_t n = text->size();
  if (n > size) {
    const std::size_t nl = text->rfind('\n', size - 1);
    n = nl == std::string::npos ? size : nl + 1;
  }
  std::string out = text->substr(0, n);
  text->erase(0, n);
  return out;
}

Status BadHandle(std::uint64_t handle) {
  return Status::FromErrno(EBADF, fmt::format("control file handle {}", handle));
}

}  // namespace

namespace internal {

struct ControlNode {
  std::string name;
  Kind kind = Kind::kDir;
  bool writable = false;
  bool owner_reads_only = false;  // trace, trace_pipe(_raw), owner-only extras
  bool anyone_writes = false;     // extras that say so (sync)
  ControlOption option = ControlOption::kWakeup;  // kOption
  std::size_t extra = 0;                           // kExtra: index in Sources::files
  const tracing::EventDef* event = nullptr;  // kEventDir, kEventEnable, kEventFormat, kEventFilter
  std::string subsystem;                     // kSubsystemDir, kSubsystemEnable
  std::uint64_t ino = 0;
  std::uint64_t parent = 0;
  std::vector<std::uint64_t> children;       // in creation order
};

struct ControlHandle {
  // Copied from the node at open; never change.
  Kind kind = Kind::kDir;
  ControlOption option = ControlOption::kWakeup;  // kOption
  std::size_t extra = 0;                           // kExtra
  bool snapshot = false;  // the text is taken at open (stats, trace, snapshot extras)
  const tracing::EventDef* event = nullptr;
  std::string subsystem;
  bool readable = false;
  bool writable = false;

  Mutex mu;  // Lock order: leaf, except that it is held across Tracer/Catalogue calls.
  // Non-stream files: the text reads are served from.  trace_pipe: lines
  // consumed from the tracer and not yet returned; trace_pipe_raw: bytes.
  std::string text GUARDED_BY(mu);
  bool have_text GUARDED_BY(mu) = false;
  std::unique_ptr<tracing::TraceReader> reader PT_GUARDED_BY(mu);   // trace_pipe only
  std::unique_ptr<tracing::RawTraceReader> raw PT_GUARDED_BY(mu);   // trace_pipe_raw only
  tracing::TaskNames tasks GUARDED_BY(mu);  // trace_pipe: callers named by the lines so far
};

}  // namespace internal

namespace {
std::unique_ptr<internal::ControlNode> MakeNode(std::string name, Kind kind,
                                                bool writable = false) {
  auto n = std::make_unique<internal::ControlNode>();
  n->name = std::move(name);
  n->kind = kind;
  n->writable = writable;
  n->owner_reads_only = kind == Kind::kTrace || kind == Kind::kTracePipe || kind == Kind::kTracePipeRaw;
  return n;
}
}  // namespace

ControlDir::ControlDir(Sources sources)
    : src_(std::move(sources)),
      made_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count()) {
  WALFS_CHECK_MSG(src_.tracer != nullptr, "ControlDir needs a tracer");
  WALFS_CHECK_MSG(!IsControlIno(src_.parent_ino), "the mount root is not a control inode");
  MutexLock l(&mu_);
  const std::uint64_t root = AddLocked(src_.parent_ino, MakeNode(std::string(kName), Kind::kDir));
  WALFS_CHECK(root == root_ino());
  AddLocked(root, MakeNode("README", Kind::kReadme));
  AddLocked(root, MakeNode("stats", Kind::kStats));
  AddLocked(root, MakeNode("trace", Kind::kTrace, true));
  AddLocked(root, MakeNode("trace_pipe", Kind::kTracePipe));
  AddLocked(root, MakeNode("trace_pipe_raw", Kind::kTracePipeRaw));
  AddLocked(root, MakeNode("tracing_on", Kind::kTracingOn, true));
  AddLocked(root, MakeNode("trace_marker", Kind::kTraceMarker, true));
  AddLocked(root, MakeNode("set_event", Kind::kSetEvent, true));
  events_dir_ = AddLocked(root, MakeNode("events", Kind::kDir));
  AddLocked(events_dir_, MakeNode("enable", Kind::kAllEnable, true));
  const std::uint64_t options = AddLocked(root, MakeNode("options", Kind::kDir));
  for (const ControlOptionFile& o : kTracerOptionFiles) {
    auto n = MakeNode(std::string(o.name), Kind::kOption, true);
    n->option = o.option;
    AddLocked(options, std::move(n));
  }
  if (src_.get_grant_wake) {
    auto n = MakeNode(std::string(kGrantWakeFile), Kind::kOption,
                      static_cast<bool>(src_.set_grant_wake));
    n->option = ControlOption::kGrantWake;
    AddLocked(options, std::move(n));
  }
  for (std::size_t i = 0; i < src_.files.size(); ++i) {
    WALFS_CHECK_MSG(static_cast<bool>(src_.files[i].read), "a control file without a reader");
    auto n = MakeNode(src_.files[i].name, Kind::kExtra, static_cast<bool>(src_.files[i].write));
    n->extra = i;
    n->owner_reads_only = src_.files[i].owner_reads_only;
    n->anyone_writes = src_.files[i].anyone_writes;
    AddLocked(root, std::move(n));
  }
  SyncCatalogueLocked();
}

ControlDir::~ControlDir() = default;

std::uint64_t ControlDir::AddLocked(std::uint64_t parent, std::unique_ptr<Node> node) {
  node->ino = kControlInoBase + nodes_.size();
  node->parent = parent;
  const std::uint64_t ino = node->ino;
  // Only the root's parent lies outside the tree.
  if (IsControlIno(parent)) nodes_[parent - kControlInoBase]->children.push_back(ino);
  nodes_.push_back(std::move(node));
  return ino;
}

// Events register from static initialisers (and could from a library loaded
// later): new ones get their nodes here, on the next call that looks at the
// tree.  The catalogue never removes an event, so neither do we.
void ControlDir::SyncCatalogueLocked() {
  const std::vector<const tracing::EventDef*> events = tracing::Catalogue::Get().Events();
  for (; synced_events_ < events.size(); ++synced_events_) {
    const tracing::EventDef* e = events[synced_events_];
    auto it = subsystems_.find(e->subsystem());
    if (it == subsystems_.end()) {
      auto dir = MakeNode(std::string(e->subsystem()), Kind::kSubsystemDir);
      dir->subsystem = e->subsystem();
      const std::uint64_t ino = AddLocked(events_dir_, std::move(dir));
      auto enable = MakeNode("enable", Kind::kSubsystemEnable, true);
      enable->subsystem = e->subsystem();
      AddLocked(ino, std::move(enable));
      it = subsystems_.emplace(std::string(e->subsystem()), ino).first;
    }
    auto dir = MakeNode(std::string(e->name()), Kind::kEventDir);
    dir->event = e;
    const std::uint64_t ino = AddLocked(it->second, std::move(dir));
    auto enable = MakeNode("enable", Kind::kEventEnable, true);
    enable->event = e;
    AddLocked(ino, std::move(enable));
    auto format = MakeNode("format", Kind::kEventFormat);
    format->event = e;
    AddLocked(ino, std::move(format));
    auto filter = MakeNode("filter", Kind::kEventFilter, true);
    filter->event = e;
    AddLocked(ino, std::move(filter));
  }
}

const ControlDir::Node* ControlDir::FindLocked(std::uint64_t ino) const {
  if (!IsControlIno(ino) || ino - kControlInoBase >= nodes_.size()) return nullptr;
  return nodes_[ino - kControlInoBase].get();
}

ControlDir::Attr ControlDir::AttrOfLocked(const Node& node) const {
  Attr a;
  a.ino = node.ino;
  a.uid = src_.owner_uid;
  a.gid = src_.owner_gid;
  a.time_ns = made_ns_;
  if (IsDir(node.kind)) {
    a.mode = S_IFDIR | 0555;
    a.nlink = 2;
    for (std::uint64_t c : node.children)
      if (IsDir(FindLocked(c)->kind)) ++a.nlink;
  } else {
    a.mode = S_IFREG | (node.owner_reads_only ? 0400 : 0444);
    if (node.writable) a.mode |= node.anyone_writes ? 0222 : 0200;
    a.nlink = 1;
  }
  return a;
}

Result<ControlDir::Attr> ControlDir::Lookup(std::uint64_t parent, std::string_view name) {
  MutexLock l(&mu_);
  SyncCatalogueLocked();
  if (!IsControlIno(parent)) {
    if (parent == src_.parent_ino && name == kName) return AttrOfLocked(*nodes_[0]);
    return Status::NotFound(fmt::format("{} is not a control directory", parent));
  }
  const Node* dir = FindLocked(parent);
  if (dir == nullptr) return Status::NotFound(fmt::format("no control inode {:#x}", parent));
  if (!IsDir(dir->kind)) return Status::FromErrno(ENOTDIR, dir->name);
  for (std::uint64_t c : dir->children) {
    const Node* child = FindLocked(c);
    if (child->name == name) return AttrOfLocked(*child);
  }
  return Status::NotFound(fmt::format("no {} in {}", name, dir->name));
}

Result<ControlDir::Attr> ControlDir::GetAttr(std::uint64_t ino) {
  MutexLock l(&mu_);
  const Node* n = FindLocked(ino);
  if (n == nullptr) return Status::NotFound(fmt::format("no control inode {:#x}", ino));
  if (n->kind == Kind::kDir || n->kind == Kind::kSubsystemDir) SyncCatalogueLocked();
  return AttrOfLocked(*n);
}

Result<std::vector<ControlDir::DirEntry>> ControlDir::ReadDir(std::uint64_t ino) {
  MutexLock l(&mu_);
  SyncCatalogueLocked();
  const Node* dir = FindLocked(ino);
  if (dir == nullptr) return Status::NotFound(fmt::format("no control inode {:#x}", ino));
  if (!IsDir(dir->kind)) return Status::FromErrno(ENOTDIR, dir->name);
  std::vector<DirEntry> out;
  out.push_back({".", AttrOfLocked(*dir)});
  if (const Node* parent = FindLocked(dir->parent))
    out.push_back({"..", AttrOfLocked(*parent)});
  else
    out.push_back({"..", Attr{.ino = dir->parent, .mode = S_IFDIR | 0755, .uid = src_.owner_uid,
                              .gid = src_.owner_gid, .time_ns = made_ns_}});
  for (std::uint64_t c : dir->children) {
    const Node* child = FindLocked(c);
    out.push_back({child->name, AttrOfLocked(*child)});
  }
  return out;
}

Result<ControlDir::Opened> ControlDir::Open(std::uint64_t ino, int flags, std::uint32_t caller_uid) {
  auto h = std::make_shared<Handle>();
  {
    MutexLock l(&mu_);
    const Node* n = FindLocked(ino);
    if (n == nullptr) return Status::NotFound(fmt::format("no control inode {:#x}", ino));
    if (IsDir(n->kind)) return Status::FromErrno(EISDIR, n->name);
    const int access = flags & O_ACCMODE;
    h->readable = access == O_RDONLY || access == O_RDWR;
    h->writable = access == O_WRONLY || access == O_RDWR;
    if (h->writable && !n->writable) return Status::FromErrno(EACCES, n->name);
    if (!IsOwner(caller_uid) && ((h->readable && n->owner_reads_only) || (h->writable && !n->anyone_writes)))
      return Status::FromErrno(EACCES, fmt::format("{} is the mount owner's (uid {})", n->name, src_.owner_uid));
    if (IsPipe(n->kind) && h->readable && consumer_ != 0)
      return Status::FromErrno(EBUSY, fmt::format("{} has a reader already: two would split its stream", n->name));
    h->kind = n->kind;
    h->option = n->option;
    h->extra = n->extra;
    h->snapshot = n->kind == Kind::kStats || n->kind == Kind::kTrace ||
                  (n->kind == Kind::kExtra && src_.files[n->extra].snapshot);
    h->event = n->event;
    h->subsystem = n->subsystem;
  }
  if (h->kind == Kind::kTrace && h->writable && (flags & O_TRUNC)) src_.tracer->Clear();
  // `echo x > set_event` starts from nothing enabled; `>>` adds (tracefs).
  if (h->kind == Kind::kSetEvent && h->writable && (flags & O_TRUNC)) tracing::Catalogue::Get().SetAllEnabled(false);
  {
    MutexLock hl(&h->mu);
    if (h->kind == Kind::kTracePipe) h->reader = std::make_unique<tracing::TraceReader>(src_.tracer);
    if (h->kind == Kind::kTracePipeRaw)
      h->raw = std::make_unique<tracing::RawTraceReader>(
          src_.tracer, tracing::CurrentTraceFileInfo(src_.tracer));
    // `stats` and `trace` are snapshots: what open saw is what every read sees.
    if (h->readable && h->snapshot) {
      h->text = Render(*h);
      h->have_text = true;
    }
  }
  MutexLock l(&mu_);
  if (IsPipe(h->kind) && h->readable) {
    // Checked again: another reader may have opened while mu_ was dropped.
    if (consumer_ != 0) return Status::FromErrno(EBUSY, "the trace stream has a reader already");
  }
  const std::uint64_t handle = next_handle_++;
  handles_.emplace(handle, h);
  if (IsPipe(h->kind) && h->readable) consumer_ = handle;
  return Opened{.handle = handle, .nonseekable = IsPipe(h->kind)};
}

Status ControlDir::Truncate(std::uint64_t ino, std::uint32_t caller_uid) {
  Kind kind;
  {
    MutexLock l(&mu_);
    const Node* n = FindLocked(ino);
    if (n == nullptr) return Status::NotFound(fmt::format("no control inode {:#x}", ino));
    if (IsDir(n->kind)) return Status::FromErrno(EISDIR, n->name);
    if (!n->writable || (!n->anyone_writes && !IsOwner(caller_uid))) return Status::FromErrno(EACCES, n->name);
    kind = n->kind;
  }
  if (kind == Kind::kTrace) src_.tracer->Clear();
  if (kind == Kind::kSetEvent) tracing::Catalogue::Get().SetAllEnabled(false);
  return Status::Ok();
}

std::shared_ptr<ControlDir::Handle> ControlDir::FindHandle(std::uint64_t handle) {
  MutexLock l(&mu_);
  auto it = handles_.find(handle);
  return it == handles_.end() ? nullptr : it->second;
}

Result<std::string> ControlDir::Read(std::uint64_t handle, std::uint64_t offset, std::size_t size,
                                     bool nonblock, const std::function<bool()>& interrupted) {
  std::shared_ptr<Handle> h = FindHandle(handle);
  if (h == nullptr || !h->readable) return BadHandle(handle);
  if (IsPipe(h->kind)) return ReadPipe(h.get(), size, nonblock, interrupted);
  MutexLock l(&h->mu);
  // Value files are made again by a read from the start, as seq_file does, so
  // that `cat` after a write on the same descriptor sees the new value.
  if (!h->have_text || (offset == 0 && !h->snapshot)) {
    h->text = Render(*h);
    h->have_text = true;
  }
  if (offset >= h->text.size()) return std::string();
  return h->text.substr(offset, size);
}

void ControlDir::PullPipe(Handle* h, std::size_t max_events, std::size_t size, std::string* out) {
  MutexLock l(&h->mu);
  if (h->kind == Kind::kTracePipeRaw) {  // bytes, not lines: a read may end inside a section
    if (h->text.empty()) static_cast<void>(h->raw->Read(&h->text, std::max(size, kRawBatchBytes), 0));
    const std::size_t n = std::min(size, h->text.size());
    if (n > 0) {
      out->assign(h->text, 0, n);
      h->text.erase(0, n);
    }
    return;
  }
  if (h->text.empty()) {
    Result<std::vector<tracing::TraceEntry>> entries = h->reader->Read(max_events, 0);
    if (entries.ok()) {
      const tracing::EventTable table = tracing::EventTable::FromCatalogue(tracing::Catalogue::Get());
      for (const tracing::TraceEntry& e : *entries)
        tracing::AppendTextLine(e, table, &h->text, &h->tasks);
    }
  }
  if (size > 0 && !h->text.empty()) *out = TakeLines(&h->text, size);
}

Result<std::string> ControlDir::ReadPipe(Handle* h, std::size_t size, bool nonblock,
                                         const std::function<bool()>& interrupted) {
  if (size == 0) return std::string();
  // Interrupts are an edge: only one raised after this read began ends it.
  const std::uint64_t interrupts = interrupts_.load(std::memory_order_acquire);
  // A text line is around 100 bytes; ask for about what fits, and keep the
  // lines that do not fit in the handle for the next read.
  const std::size_t max_events = std::min<std::size_t>(size / 64 + 1, 4096);
  for (;;) {
    std::string out;
    PullPipe(h, max_events, size, &out);
    if (!out.empty()) return out;
    if (nonblock) return Status::WouldBlock("trace_pipe: no events to read");
    if (interrupts_.load(std::memory_order_acquire) != interrupts) return std::string();
    if (interrupted && interrupted()) return Status::FromErrno(EINTR, "trace_pipe: read interrupted");
    // No lock is held while waiting.  An InterruptReaders() that lands
    // between the check above and the wait below is seen after one slice.
    src_.tracer->WaitForData(kWaitSliceNs);
  }
}

bool ControlDir::Readable(std::uint64_t handle) {
  std::shared_ptr<Handle> h = FindHandle(handle);
  // An unknown handle is "ready": the read that follows reports EBADF.
  if (h == nullptr || !IsPipe(h->kind)) return true;
  std::string unused;
  PullPipe(h.get(), 64, 0, &unused);
  MutexLock l(&h->mu);
  return !h->text.empty();
}

Result<std::size_t> ControlDir::Write(std::uint64_t handle, std::uint64_t /*offset*/,
                                      std::string_view data, std::uint32_t caller_pid) {
  std::shared_ptr<Handle> h = FindHandle(handle);
  if (h == nullptr || !h->writable) return BadHandle(handle);
  if (h->kind == Kind::kTraceMarker) {  // the text as written, not a value
    tracing::WriteMarker(caller_pid, data);
    return data.size();
  }
  WALFS_RETURN_IF_ERROR(Apply(*h, TrimValue(data)));
  MutexLock l(&h->mu);
  h->have_text = false;
  return data.size();
}

void ControlDir::Release(std::uint64_t handle) {
  MutexLock l(&mu_);
  handles_.erase(handle);
  if (consumer_ == handle) consumer_ = 0;
}

void ControlDir::InterruptReaders() {
  interrupts_.fetch_add(1, std::memory_order_acq_rel);
  src_.tracer->InterruptReaders();
}

std::string ControlDir::Render(const Handle& h) const {
  tracing::Catalogue& cat = tracing::Catalogue::Get();
  switch (h.kind) {
    case Kind::kReadme: {
      std::string text(kControlReadmeFiles);
      for (const Sources::File& f : src_.files) text += fmt::format("  {:<20}{}\n", f.name, f.help);
      return fmt::format("{}\n{}", text, kControlReadmeExample);
    }
    case Kind::kStats:
      return StatsText(src_.stats ? src_.stats() : std::string(), src_.tracer->Stats(),
                       cat.tracing_on());
    case Kind::kTrace: return TraceText(src_.tracer);
    case Kind::kTracingOn: return cat.tracing_on() ? "1\n" : "0\n";
    case Kind::kAllEnable: return EnableText(cat.Events(), "");
    case Kind::kSubsystemEnable: return EnableText(cat.Events(), h.subsystem);
    case Kind::kEventEnable: return h.event->enabled() ? "1\n" : "0\n";
    case Kind::kEventFormat: return FormatText(*h.event);
    case Kind::kEventFilter: return cat.FilterText(*h.event) + "\n";
    case Kind::kSetEvent: return SetEventText(cat.Events());
    case Kind::kTraceMarker: return {};  // write-only in effect, as tracefs's
    case Kind::kOption:
      if (h.option == ControlOption::kGrantWake) return src_.get_grant_wake() + "\n";
      return TracerOptionText(h.option, src_.tracer->options());
    case Kind::kExtra: return src_.files[h.extra].read();
    case Kind::kDir:
    case Kind::kSubsystemDir:
    case Kind::kEventDir:
    case Kind::kTracePipe:
    case Kind::kTracePipeRaw: break;
  }
  WALFS_CHECK_MSG(false, "no text for this control node");
  return {};
}

Status ControlDir::Apply(const Handle& h, std::string_view value) {
  tracing::Catalogue& cat = tracing::Catalogue::Get();
  switch (h.kind) {
    case Kind::kTrace:  // any write clears, as `echo > trace` does
      src_.tracer->Clear();
      return Status::Ok();
    case Kind::kOption: return ApplyOption(h.option, value);
    case Kind::kExtra: return src_.files[h.extra].write(value);
    case Kind::kEventFilter: return cat.SetFilter(*h.event, value);
    case Kind::kSetEvent: {
      std::vector<std::pair<const tracing::EventDef*, bool>> changes;
      WALFS_ASSIGN_OR_RETURN(changes, ParseSetEvent(cat.Events(), value));
      for (const auto& [e, on] : changes) WALFS_RETURN_IF_ERROR(cat.SetEnabled(e->subsystem(), e->name(), on));
      return Status::Ok();
    }
    default: break;
  }
  bool on = false;
  WALFS_ASSIGN_OR_RETURN(on, ParseControlBool(value));
  switch (h.kind) {
    case Kind::kTracingOn: cat.SetTracingOn(on); return Status::Ok();
    case Kind::kAllEnable: cat.SetAllEnabled(on); return Status::Ok();
    case Kind::kSubsystemEnable: return cat.SetSubsystemEnabled(h.subsystem, on);
    case Kind::kEventEnable: return cat.SetEnabled(h.event->subsystem(), h.event->name(), on);
    default: break;
  }
  WALFS_CHECK_MSG(false, "a writable control file without a writer");
  return Status::Ok();
}

Status ControlDir::ApplyOption(ControlOption option, std::string_view value) {
  if (option == ControlOption::kGrantWake) {
    // Checked here too, so that a bad name is EINVAL whatever the mount does.
    journal::WakeMode mode;
    WALFS_ASSIGN_OR_RETURN(mode, journal::ParseWakeMode(value));
    return src_.set_grant_wake(journal::WakeModeName(mode));
  }
  // Read-modify-write of the whole option set: one writer at a time, so that
  // writes to two option files cannot undo each other.
  MutexLock l(&options_mu_);
  tracing::TracerOptions o = src_.tracer->options();
  WALFS_RETURN_IF_ERROR(ParseTracerOption(option, value, &o));
  return src_.tracer->SetOptions(o);  // Validate()s first: a bad value changes nothing
}

}  // namespace walfs::mount
