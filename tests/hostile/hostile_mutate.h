// Damaging one metadata block of a base image (docs/hostile_images.md,
// "Mutations"), deterministically from a seed:
//
//   ScratchImage scratch(base);             // or a copy of base.image
//   Mutation m = Mutate(base, seed, scratch.bytes());
//
// The seed picks the block kind, the block, and one of: flip 1-4 bits,
// overwrite 1-8 bytes, set an aligned 1/2/4/8-byte field to an extreme
// value (0, 1, all ones, signed min/max, +-1, random), zero the whole
// structure, or break its magic.  Then, for half the seeds, the checksums
// are made current again (SealBlock, SealInodeBlock, the superblock's CRC,
// a log record re-encoded around its changed payload or header), so the
// semantic checks behind the CRC are what meets the damage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "tests/hostile/hostile_image.h"

namespace walfs::hostile {

// The mutators' random source (seeded per round) and a uniform draw from
// [0, n) (0 for n = 0).
using Rng = std::mt19937_64;
inline std::uint64_t Below(Rng& rng, std::uint64_t n) { return n == 0 ? 0 : rng() % n; }

enum class MutationOp : std::uint8_t { kFlipBits, kRandomBytes, kExtremeField, kZero, kBadMagic, kCount };
inline constexpr int kMutationOps = static_cast<int>(MutationOp::kCount);
std::string_view MutationOpName(MutationOp op);

struct Mutation {
  BlockKind kind = BlockKind::kSuperblock;
  MutationOp op = MutationOp::kFlipBits;
  std::uint64_t blkno = 0;
  // The damaged block's bytes in the image: nothing outside them changed,
  // so copying them back from the base undoes the mutation.
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  bool resealed = false;
  bool payload = false;    // kLogRecord, resealed: the payload changed (a forged record), not the header
  bool changed = false;    // the image differs from the base
  // fsck must report something: a clean image whose in-use metadata no
  // longer checks out (a CRC left bad, or a magic broken).
  bool must_flag = false;
  std::string description;  // "extent_node blk 1234: set u32 @52 = 0xffffffff, resealed"
};

// kind < 0: chosen by the seed.
// `image` is the base image's bytes (a copy, or a ScratchImage's view),
// damaged in place in bytes [m.offset, m.offset + m.length) only.
Mutation Mutate(const BaseImage& base, std::uint64_t seed, std::span<std::byte> image, int kind = -1);

// The flip campaign's damage (issue 24): one byte of one block of the kind
// (kind < 0: seed % kBlockKinds, as RunRound) XORed with a random non-zero
// value, anywhere in the block, checksums left as they are -- what a disk
// that rotted one byte leaves.  `op` is kFlipBits; nothing is resealed.
Mutation FlipOneByte(const BaseImage& base, std::uint64_t seed, std::span<std::byte> image, int kind = -1);

}  // namespace walfs::hostile
