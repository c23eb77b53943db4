// libFuzzer target: damaged images through the whole filesystem -- fsck,
// mount (log recovery), a walk reading every directory entry, extent
// record, xattr record and symlink, changes, unmount.  This is the fuzzer
// of the decoders that only the mounted filesystem reaches: directory
// B+tree entries (fs/dir.cc), extent records in map leaves
// (fs/file_map.cc) and xattr records (fs/filesystem_xattr.cc), on top of
// the block-level decoders the other fuzzers cover alone.
//
// Input: flavour u8, block kind u8, block index u16, then (offset u16,
// value u8) patches applied to that block of the base image
// (tests/hostile/hostile_image.h).  The build ignores CRC mismatches
// (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION), so patches reach the
// semantic checks.  Any crash, sanitizer report or error without a message
// is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/coding.h"
#include "base/messages.h"
#include "tests/hostile/hostile_image.h"
#include "tests/hostile/hostile_round.h"

namespace {
using namespace walfs::hostile;

const BaseImage& Base(int flavour) {
  static const BaseImage* images[2] = {};
  if (images[flavour] == nullptr) {
    auto b = BuildBaseImage(static_cast<Flavour>(flavour));
    if (!b.ok()) std::abort();
    images[flavour] = new BaseImage(std::move(b).value());
  }
  return *images[flavour];
}
}  // namespace

// Most inputs damage the image, and a damaged mount logs a shutdown or a
// refusal: expected, so not printed (a failing input prints its round's).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  walfs::Messages::Get().SetSink(walfs::Messages::Sink::kNone);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4 || size > 4 + 3 * 64) return 0;
  const BaseImage& base = Base(data[0] & 1);
  const int kind = data[1] % kBlockKinds;
  const auto& blocks = base.blocks[kind];
  if (blocks.empty()) return 0;
  const MetaBlock& t = blocks[walfs::DecodeFixed16(reinterpret_cast<const char*>(data) + 2) % blocks.size()];
  std::vector<std::byte> image = base.image;
  for (std::size_t i = 4; i + 3 <= size; i += 3) {
    const std::uint32_t off = walfs::DecodeFixed16(reinterpret_cast<const char*>(data) + i) % t.length;
    image[t.offset + off] = static_cast<std::byte>(data[i + 2]);
  }
  Mutation m;
  m.kind = static_cast<BlockKind>(kind);
  m.blkno = t.blkno;
  m.description = "fuzzed";
  const RoundResult r = RunOnImage(std::move(image), m);
  if (!r.violations.empty()) {
    for (const std::string& v : r.violations) std::fprintf(stderr, "image_fuzzer: %s\n", v.c_str());
    std::fprintf(stderr, "image_fuzzer: the round's messages:\n%s", r.messages.c_str());
    __builtin_trap();
  }
  return 0;
}
