// fsck's shared state: the helpers every phase uses (fs/fsck_context.h).
#include "fs/fsck_context.h"

#include <algorithm>
#include <span>

#include <fmt/format.h>

namespace walfs::fs::fsck {

using format::InodeCore;
using format::kInodeSize;

namespace {

constexpr const char* kPhaseNames[Context::kPhases + 1] = {
    "", "log", "allocation groups and inodes", "block ownership", "directory tree", "unlinked lists", "counters"};

}  // namespace

void Context::Problem(std::string message) { report->problems.push_back({std::move(message), false}); }

void Context::Repaired(std::size_t problem, std::string_view how) {
  report->problems[problem].message += fmt::format(": {}", how);
  report->problems[problem].repaired = true;
}

Status Context::ReadBlock(std::uint64_t blkno, std::vector<std::byte>* b) {
  b->resize(sb().block_size);
  return dev->Read(blkno * sb().block_size, b->data(), b->size());
}

Status Context::RewriteInode(std::uint64_t ino, const std::function<Status(InodeCore*)>& change) {
  const std::uint64_t block = ino / sb().inodes_per_block();
  const std::size_t offset = std::size_t{ino % sb().inodes_per_block()} * kInodeSize;
  std::vector<std::byte> b;
  WALFS_RETURN_IF_ERROR(ReadBlock(block, &b));
  WALFS_ASSIGN_OR_RETURN(InodeCore core,
                         format::DecodeInode(std::span<const std::byte>(b).subspan(offset, kInodeSize), ino));
  WALFS_RETURN_IF_ERROR(change(&core));
  format::EncodeInode(core, std::span<std::byte>(b).subspan(offset, kInodeSize));
  return dev->Write(block * sb().block_size, b.data(), b.size());
}

void Context::Claim(std::uint64_t blkno, std::uint32_t count, const std::string& who) {
  for (std::uint64_t b = blkno; b < blkno + count; ++b) {
    if (b >= sb().total_blocks) {
      Problem(fmt::format("{} claims block {}, beyond the end of the filesystem", who, b));
      return;
    }
    if (claimed[b]) {
      Problem(fmt::format("block {} is claimed twice (again by {})", b, who));
      continue;
    }
    claimed[b] = true;
  }
}

void Context::Phase(int phase) const {
  if (options.progress) options.progress({.phase = phase, .phases = kPhases, .name = kPhaseNames[phase], .done = 0});
}

void Context::Advance(int phase, double done) const {
  if (options.progress)
    options.progress({.phase = phase, .phases = kPhases, .name = kPhaseNames[phase], .done = std::min(done, 1.0)});
}

}  // namespace walfs::fs::fsck
