// Damage a mounted filesystem finds, remembered in the superblock's error
// record (fs/error_recorder.h; docs/disk_format.md, "Errors found while
// mounted"): the recorder's start at mount, and the transaction that logs
// the record.
#include <fmt/format.h>

#include "base/messages.h"
#include "fs/error_recorder.h"
#include "fs/filesystem.h"
#include "fs/format/block_types.h"
#include "fs/fs_trans.h"
#include "fs/super.h"

namespace walfs::fs {

void Filesystem::StartErrorRecorder() {
  const std::string name = options_.image.empty() ? device_->Describe() : options_.image;
  errors_ = std::make_unique<ErrorRecorder>(ErrorRecorder::Options{
      .image = name,
      .initial = sb_.errors,
      .can_log = [this] { return !options_.read_only && !log_->IsShutdown(); },
      .log = [this](const format::ErrorRecord& r) { return LogErrorRecord(r); },
  });
  // As ext4 does: the mount goes on, and says once that fsck has work.
  if (!sb_.errors.empty() && options_.warn_recorded_errors)
    Message(Severity::kWarning, "{}: errors were recorded while mounted before ({}); unmount it and run "
            "fsck.walfs -f -y {}",
            name, format::ErrorRecordString(sb_.errors), name);
}

Status Filesystem::LogErrorRecord(const format::ErrorRecord& r) NO_THREAD_SAFETY_ANALYSIS {
  WALFS_ASSIGN_OR_RETURN(FsTransaction tx, FsTransaction::Begin(log_.get(), journal::TransType::kErrorRecord));
  WALFS_ASSIGN_OR_RETURN(BufRef sbuf, cache_->Read(0, format::BlockType::kSuper));
  tx.Hold(sbuf);
  char* s = reinterpret_cast<char*>(sbuf->data().data());
  format::EncodeErrorRecord(r, s + format::kSuperErrorsOffset);
  format::SealSuperblock(sbuf->data());  // current for readers of the buffer; writeback reseals
  tx.LogRange(sbuf, format::kSuperErrorsOffset, format::kSuperErrorsEnd - 1);
  return tx.Commit().status();
}

void Filesystem::WriteErrorRecordInPlace() {
  if (!errors_ || errors_->noted() == 0 || options_.read_only) return;
  const std::string name = options_.image.empty() ? device_->Describe() : options_.image;
  // Only the record changes: the rest of the superblock stays as on disk
  // (the next mount's recovery brings what the log holds).  Recovery
  // replays the record's bytes only if a record was logged this mount, and
  // then the one it brings back counts these errors too, but the last.
  Result<format::Superblock> disk = ReadSuperblock(device_);
  Status s = disk.status();
  if (disk.ok()) {
    disk->errors = errors_->record();
    s = WriteSuperblock(device_, *disk);
  }
  if (s.ok()) {
    Message(Severity::kWarning, "{}: the filesystem shut down; the errors found ({}) were written into the "
            "superblock in place: run fsck.walfs -f -y {}",
            name, format::ErrorRecordString(disk->errors), name);
  } else {
    Message(Severity::kError, "{}: the filesystem shut down and the errors found could not be written into "
            "the superblock ({}): run fsck.walfs -f -y {}",
            name, s.ToString(), name);
  }
}

format::ErrorRecord Filesystem::recorded_errors() const {
  return errors_ ? errors_->record() : sb_.errors;
}

}  // namespace walfs::fs
