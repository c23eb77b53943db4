#include "journal/log_transactions.h"

#include <fmt/format.h>

namespace walfs::journal {

namespace {
bool Known(ItemType t) {
  return t == ItemType::kNone || t == ItemType::kTransHeader || t == ItemType::kBuffer;
}
}  // namespace

Status TransactionAssembler::AddRecord(Lsn lsn, std::string_view payload) {
  OpReader ops(payload);
  OpHeader op;
  std::string_view body;
  while (ops.Next(&op, &body)) {
    if (op.flags & kOpUnmount) {
      ++unmount_ops_;
      continue;
    }
    auto it = open_.find(op.tid);
    if (op.flags & kOpStart) {
      if (it != open_.end())
        return Status::Corruption(fmt::format("record {}: tid {} started twice", LsnString(lsn), op.tid));
      it = open_.emplace(op.tid, Open{}).first;
      it->second.tx.tid = op.tid;
      it->second.tx.start_lsn = lsn;
    } else if (it == open_.end()) {
      // Its START is before the tail: the transaction's changes were written
      // back before the tail moved past it.
      ++orphan_ops_;
      continue;
    }
    Open& o = it->second;
    const bool known = Known(op.type);
    if (!known && static_cast<std::uint8_t>(op.type) < static_cast<std::uint8_t>(ItemType::kFirstSkippableType))
      return Status::Corruption(fmt::format("record {}: tid {} has an op of unknown type {}",
                                            LsnString(lsn), op.tid,
                                            static_cast<int>(op.type)));
    if (op.flags & kOpWasCont) {
      if (!o.continuing || (!o.skipping && o.tx.items.empty()))
        return Status::Corruption(fmt::format(
            "record {}: tid {} continues an op that was not split", LsnString(lsn), op.tid));
      if (!o.skipping) o.tx.items.back().body.append(body);
    } else if (o.continuing) {
      return Status::Corruption(fmt::format(
          "record {}: tid {} leaves a split op unfinished", LsnString(lsn), op.tid));
    } else if (!known) {
      ++skipped_ops_;
      o.skipping = true;
    } else if (op.type != ItemType::kNone || !body.empty()) {
      o.tx.items.push_back(LoggedItem{op.type, std::string(body)});
    }
    o.continuing = (op.flags & kOpContinue) != 0;
    if (!o.continuing) o.skipping = false;
    if (op.flags & kOpCommit) {
      if (o.continuing)
        return Status::Corruption(fmt::format(
            "record {}: tid {} commits with a split op unfinished", LsnString(lsn), op.tid));
      o.tx.commit_lsn = lsn;
      committed_.push_back(std::move(o.tx));
      open_.erase(it);
    }
  }
  if (!ops.error().empty())
    return Status::Corruption(fmt::format("record {}: {}", LsnString(lsn), ops.error()));
  return Status::Ok();
}

}  // namespace walfs::journal
