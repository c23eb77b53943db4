// Specs of the on-disk format: every structure round-trips, and every check
// a decoder makes refuses a damaged copy with a reason (LevelDB log_test
// style: corrupt one field at a time).
#include <sys/stat.h>

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "base/coding.h"
#include "fs/format/ag_format.h"
#include "fs/format/block_header.h"
#include "fs/format/inode_format.h"
#include "fs/format/superblock_format.h"
#include "fs/mkfs.h"

namespace walfs::fs::format {
namespace {

Superblock TestSb() {
  auto sb = PlanFilesystem(64ull << 20, MkfsOptions{.label = "test", .uuid = Uuid{1, 2, 3}});
  EXPECT_TRUE(sb.ok()) << sb.status().ToString();
  return *sb;
}

std::vector<std::byte> EncodeSb(const Superblock& sb) {
  std::vector<std::byte> b(sb.block_size);
  EncodeSuperblock(sb, b);
  return b;
}

TEST(Superblock, RoundTrips) {
  const Superblock sb = TestSb();
  auto b = EncodeSb(sb);
  auto d = DecodeSuperblock(b, 64ull << 20);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->uuid, sb.uuid);
  EXPECT_EQ(d->label, "test");
  EXPECT_EQ(d->total_blocks, sb.total_blocks);
  EXPECT_EQ(d->ag_count, sb.ag_count);
  EXPECT_EQ(d->root_ino, sb.root_ino);
  EXPECT_TRUE(d->clean());
}

TEST(Superblock, AnErrorRecordRoundTrips) {
  Superblock sb = TestSb();
  sb.errors.count = 3;
  sb.errors.first = {.time_s = 1714564800, .ino = 131, .blkno = 0, .err = 117, .what = "inode decode"};
  sb.errors.last = {.time_s = 1714564900, .ino = 0, .blkno = 1234, .err = 5, .what = "I/O error on read"};
  auto d = DecodeSuperblock(EncodeSb(sb), 64ull << 20);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->errors, sb.errors);
  EXPECT_EQ(ErrorRecordString(d->errors),
            "3 errors; first: inode decode (inode 131) at 2024-05-01 12:00:00 UTC; "
            "last: I/O error on read (block 1234) at 2024-05-01 12:01:40 UTC");
}

TEST(Superblock, AnErrorRecordLivesInTheBytesOlderImagesLeftZero) {
  Superblock sb = TestSb();
  const auto none = EncodeSb(sb);
  for (std::uint32_t i = kSuperErrorsOffset; i < kSuperSize; ++i)
    ASSERT_EQ(none[i], std::byte{0}) << "byte " << i << ": no record is all zero";
  auto d = DecodeSuperblock(none, 64ull << 20);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->errors.empty());
  EXPECT_EQ(ErrorRecordString(d->errors), "none");
  // Logged alone (the mount's transaction): the rest of the superblock is
  // untouched, and the CRC resealed covers it.
  sb.errors.count = 1;
  sb.errors.first = sb.errors.last = {.time_s = 1, .ino = 0, .blkno = 99, .err = 117, .what = "directory block CRC"};
  auto logged = none;
  EncodeErrorRecord(sb.errors, reinterpret_cast<char*>(logged.data()) + kSuperErrorsOffset);
  SealSuperblock(logged);
  EXPECT_EQ(logged, EncodeSb(sb));
  for (std::uint32_t i = kSuperErrorsEnd; i < kSuperSize; ++i) ASSERT_EQ(logged[i], std::byte{0}) << i;
}

TEST(Superblock, ErrorTextLongerThanItsFieldIsCut) {
  Superblock sb = TestSb();
  sb.errors.count = 1;
  sb.errors.first.what = std::string(40, 'x');
  auto d = DecodeSuperblock(EncodeSb(sb), 64ull << 20);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->errors.first.what, std::string(kErrorWhatSize, 'x'));
}

TEST(Superblock, AnyFlippedByteIsCaught) {
  const Superblock sb = TestSb();
  const auto good = EncodeSb(sb);
  for (std::size_t i = 0; i < kSuperSize; ++i) {
    auto b = good;
    b[i] ^= std::byte{0x40};
    EXPECT_FALSE(DecodeSuperblock(b).ok()) << "byte " << i;
  }
}

TEST(Superblock, ReasonsNameWhatIsWrong) {
  const Superblock sb = TestSb();
  std::vector<std::byte> zeros(sb.block_size);
  auto r = DecodeSuperblock(zeros);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a walfs image"), std::string_view::npos);

  Superblock v2 = sb;
  v2.version = 2;
  r = DecodeSuperblock(EncodeSb(v2));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotSupported);

  Superblock feat = sb;
  feat.incompat = 1u << 7;
  r = DecodeSuperblock(EncodeSb(feat));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("incompatible"), std::string_view::npos);

  Superblock geo = sb;
  geo.total_blocks += std::uint64_t{geo.ag_blocks} * 2;
  r = DecodeSuperblock(EncodeSb(geo));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("geometry"), std::string_view::npos);

  Superblock bs = sb;
  bs.block_size = 3000;
  EXPECT_FALSE(DecodeSuperblock(EncodeSb(bs)).ok());

  Superblock bm = sb;
  bm.bitmap_blocks += 1;
  EXPECT_FALSE(DecodeSuperblock(EncodeSb(bm)).ok());

  Superblock root = sb;
  root.root_ino = 1;
  EXPECT_FALSE(DecodeSuperblock(EncodeSb(root)).ok());

  // Fits its own geometry, but not the device it is on.
  r = DecodeSuperblock(EncodeSb(sb), 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("truncated"), std::string_view::npos);
}

// walfs-admin -U: the identity changes, the blocks' UUID stays in meta_uuid
// (incompat bit 0), and going back to it clears the bit.
TEST(Superblock, AChangedUuidKeepsTheMetadataUuid) {
  const Superblock sb = TestSb();
  std::vector<std::byte> block(sb.block_size);
  InitBitmapBlock(sb, 1, 0, block);
  Superblock changed = sb;
  changed.ChangeUuid(Uuid{9, 9, 9});
  EXPECT_EQ(changed.uuid, (Uuid{9, 9, 9}));
  EXPECT_EQ(changed.metadata_uuid(), sb.uuid);
  auto d = DecodeSuperblock(EncodeSb(changed));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->incompat, sb.incompat | kIncompatMetaUuid);
  EXPECT_EQ(d->uuid, (Uuid{9, 9, 9}));
  EXPECT_EQ(d->meta_uuid, sb.uuid);
  EXPECT_TRUE(VerifyBitmapBlock(block, *d, 1, 0).ok()) << "blocks made before the change verify";
  d->ChangeUuid(Uuid{7});
  EXPECT_EQ(d->metadata_uuid(), sb.uuid) << "a second change keeps the first UUID for the blocks";
  d->ChangeUuid(sb.uuid);
  EXPECT_EQ(d->incompat, sb.incompat);
  EXPECT_EQ(d->meta_uuid, Uuid{});
  EXPECT_TRUE(EncodeSb(*d) == EncodeSb(sb)) << "back to the original superblock, byte for byte";
}

TEST(Uuid, ParsesWhatUuidStringPrintsAndNamesWhatIsWrong) {
  const Uuid u{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10};
  auto p = ParseUuid(UuidString(u));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, u);
  EXPECT_EQ(*ParseUuid("01234567-89AB-CDEF-FEDC-BA9876543210"), u);
  for (const char* bad : {"", "0123", "01234567-89ab-cdef-fedc-ba98765432100", "0123456789ab-cdef-fedc-ba9876543210",
                          "01234567-89ab-cdef-fedc-ba987654321x"}) {
    auto r = ParseUuid(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("is not a UUID"), std::string_view::npos) << r.status().message();
  }
}

TEST(BlockHeader, SealedBlocksVerifyAndDamageIsNamed) {
  const Superblock sb = TestSb();
  std::vector<std::byte> b(sb.block_size);
  InitBitmapBlock(sb, 1, 0, b);
  EXPECT_TRUE(VerifyBitmapBlock(b, sb, 1, 0).ok());
  EXPECT_FALSE(VerifyBitmapBlock(b, sb, 2, 0).ok());  // misdirected
  auto other = sb;
  other.uuid[0] ^= 1;
  auto s = VerifyBitmapBlock(b, other, 1, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("belongs to filesystem"), std::string_view::npos);
  b[100] ^= std::byte{1};
  s = VerifyBitmapBlock(b, sb, 1, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("CRC"), std::string_view::npos);
  EXPECT_NE(MagicString(kAgBitmapMagic).find("AGBM"), std::string::npos);
}

TEST(Bitmap, FindAgreesWithTestingEveryBitOnEveryRangeAndValue) {
  const Superblock sb = TestSb();
  std::vector<std::byte> b(sb.block_size);
  InitBitmapBlock(sb, 1, 0, b);
  const std::uint64_t bits = BitsPerBitmapBlock(sb.block_size);
  // Runs of every length around a word, single bits, and a full tail.
  std::uint64_t x = 12345;
  for (std::uint64_t i = 0; i < bits;) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const std::uint64_t len = 1 + (x >> 33) % 150;
    const bool used = (x >> 20) & 1;
    for (std::uint64_t j = i; j < std::min(bits, i + len); ++j) BitmapSet(b, j, used);
    i += len;
  }
  for (std::uint64_t j = bits - 70; j < bits; ++j) BitmapSet(b, j, true);
  auto naive = [&](std::uint64_t from, std::uint64_t to, bool used) {
    while (from < to && BitmapTest(b, from) != used) ++from;
    return from;
  };
  for (int round = 0; round < 3000; ++round) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const std::uint64_t from = (x >> 11) % bits;
    const std::uint64_t to = from + (x >> 40) % (bits - from + 1);
    for (const bool used : {false, true})
      ASSERT_EQ(BitmapFind(b, from, to, used), naive(from, to, used))
          << "from " << from << " to " << to << " used " << used;
  }
  EXPECT_EQ(BitmapFind(b, bits - 70, bits, false), bits);  // none: `to`
  EXPECT_EQ(BitmapFind(b, 5, 5, true), 5u);                 // empty range
}

TEST(AgHeader, RoundTripsAndRefusesImpossibleCounts) {
  const Superblock sb = TestSb();
  std::vector<std::byte> b(sb.block_size);
  AgHeader h{1, sb.AgLength(1), 100, 64, 10, 1, 0};
  ASSERT_TRUE(sb.uninit_ag());
  h.bitmap_init = MetadataBitmapBlocks(sb);
  h.imap_init = 1;
  EncodeAgHeader(h, sb, b);
  auto d = DecodeAgHeader(b, sb, 1);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->free_blocks, 100u);
  EXPECT_EQ(d->ifree, 10u);
  auto bad = h;
  bad.ifree = 65;
  EncodeAgHeader(bad, sb, b);
  EXPECT_FALSE(DecodeAgHeader(b, sb, 1).ok());
  bad = h;
  bad.icount = 63;
  EncodeAgHeader(bad, sb, b);
  EXPECT_FALSE(DecodeAgHeader(b, sb, 1).ok());
  bad = h;
  bad.free_blocks = h.length;
  EncodeAgHeader(bad, sb, b);
  EXPECT_FALSE(DecodeAgHeader(b, sb, 1).ok());
  bad = h;
  bad.length = h.length - 1;
  EncodeAgHeader(bad, sb, b);
  EXPECT_FALSE(DecodeAgHeader(b, sb, 1).ok());
  EncodeAgHeader(h, sb, b);
  EXPECT_FALSE(DecodeAgHeader(b, sb, 0).ok());  // AG 1's header read as AG 0's
  // uninit_ag's counts of map blocks written: within the maps, the
  // metadata's bitmap blocks always written, every chunk in a written block.
  bad = h;
  bad.bitmap_init = sb.bitmap_blocks + 1;
  EncodeAgHeader(bad, sb, b);
  EXPECT_FALSE(DecodeAgHeader(b, sb, 1).ok());
  bad = h;
  bad.bitmap_init = MetadataBitmapBlocks(sb) - 1;
  EncodeAgHeader(bad, sb, b);
  EXPECT_FALSE(DecodeAgHeader(b, sb, 1).ok());
  bad = h;
  bad.imap_init = 0;  // a chunk, and no map block to record it
  EncodeAgHeader(bad, sb, b);
  EXPECT_FALSE(DecodeAgHeader(b, sb, 1).ok());
  Superblock full = sb;
  full.incompat &= ~kIncompatUninitAg;
  EncodeAgHeader(h, full, b);
  EXPECT_FALSE(DecodeAgHeader(b, full, 1).ok()) << "counts without the feature are damage";
  h.bitmap_init = h.imap_init = 0;
  EncodeAgHeader(h, full, b);
  EXPECT_TRUE(DecodeAgHeader(b, full, 1).ok());
}

TEST(Bitmap, BitsAreIndependent) {
  const Superblock sb = TestSb();
  std::vector<std::byte> b(sb.block_size);
  InitBitmapBlock(sb, 0, 0, b);
  for (std::uint64_t bit : std::vector<std::uint64_t>{0, 7, 8, 1000, BitsPerBitmapBlock(sb.block_size) - 1})
    BitmapSet(b, bit, true);
  EXPECT_TRUE(BitmapTest(b, 0));
  EXPECT_FALSE(BitmapTest(b, 1));
  EXPECT_TRUE(BitmapTest(b, 7));
  EXPECT_TRUE(BitmapTest(b, 8));
  EXPECT_TRUE(BitmapTest(b, 1000));
  BitmapSet(b, 7, false);
  EXPECT_FALSE(BitmapTest(b, 7));
  EXPECT_TRUE(BitmapTest(b, 8));
  EXPECT_EQ(BitmapByteOffset(8), kBlockHeaderSize + 1);
}

TEST(InodeMap, RecordsAreCheckedAgainstTheGeometry) {
  const Superblock sb = TestSb();
  std::vector<std::byte> b(sb.block_size);
  InitImapBlock(sb, 0, 0, b);
  const std::uint32_t start = (AgFirstFree(sb) + 7) / 8 * 8;
  PutImapRecord(b, 3, {start, 2, 0b1001});
  SealBlock(b);
  EXPECT_TRUE(VerifyImapBlock(b, sb, 0, 0).ok());
  const ImapRecord r = GetImapRecord(b, 3);
  EXPECT_EQ(r.start, start);
  EXPECT_EQ(r.free_mask, 0b1001u);
  PutImapRecord(b, 3, {start, 3, 0b1001});  // count disagrees with the mask
  SealBlock(b);
  EXPECT_FALSE(VerifyImapBlock(b, sb, 0, 0).ok());
  PutImapRecord(b, 3, {start + 1, 2, 0b1001});  // not chunk-aligned
  SealBlock(b);
  EXPECT_FALSE(VerifyImapBlock(b, sb, 0, 0).ok());
  PutImapRecord(b, 3, {1, 2, 0b1001});  // on top of the AG's metadata
  SealBlock(b);
  EXPECT_FALSE(VerifyImapBlock(b, sb, 0, 0).ok());
}

InodeCore Dir(std::uint64_t ino) {
  InodeCore n;
  n.ino = ino;
  n.mode = S_IFDIR | 0755;
  n.nlink = 2;
  n.format = ForkFormat::kLocal;
  n.literal = EncodeLocalDir(ino, {{ino + 1, 8, "file"}});
  n.size = n.literal.size();
  n.mtime = {1700000000, 123};
  return n;
}

TEST(Inode, RoundTripsEveryField) {
  InodeCore n = Dir(4096);
  n.uid = 1000;
  n.gid = 100;
  n.generation = 7;
  n.flags = 3;
  n.next_unlinked = 5000;
  n.lsn = 0x100000002ull;
  n.atime = {-5, 999999999};
  std::vector<std::byte> b(kInodeSize);
  EncodeInode(n, b);
  auto d = DecodeInode(b, 4096);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  n.literal.resize(kLiteralSize, '\0');
  EXPECT_EQ(*d, n);
}

TEST(Inode, DamageAndInconsistencyAreRefused) {
  std::vector<std::byte> b(kInodeSize);
  EncodeInode(Dir(4096), b);
  EXPECT_FALSE(DecodeInode(b, 4097).ok());  // another inode's slot
  for (std::size_t i : {0u, 2u, 3u, 4u, 16u, 104u, 200u, 511u}) {
    auto c = b;
    c[i] ^= std::byte{0x10};
    EXPECT_FALSE(DecodeInode(c, 4096).ok()) << "byte " << i;
  }
  auto enc = [](InodeCore n) {
    std::vector<std::byte> out(kInodeSize);
    EncodeInode(n, out);
    return DecodeInode(out, n.ino);
  };
  InodeCore reg = Dir(8);
  reg.mode = S_IFREG | 0644;  // a regular file in local format
  EXPECT_FALSE(enc(reg).ok());
  InodeCore big = Dir(8);
  big.size = kLiteralSize + 1;
  EXPECT_FALSE(enc(big).ok());
  InodeCore typeless = Dir(8);
  typeless.mode = 0644;
  EXPECT_FALSE(enc(typeless).ok());
  InodeCore fifo = Dir(8);
  fifo.mode = S_IFIFO | 0644;
  EXPECT_FALSE(enc(fifo).ok());  // a fifo with data
  fifo.format = ForkFormat::kNone;
  fifo.literal.clear();
  EXPECT_TRUE(enc(fifo).ok());
  InodeCore ext = Dir(8);
  ext.mode = S_IFREG | 0644;
  ext.format = ForkFormat::kExtents;
  ext.nextents = 23;  // 23 x 16 > 352
  EXPECT_FALSE(enc(ext).ok());
  ext.nextents = 22;
  ext.literal.assign(kLiteralSize, '\0');
  for (std::uint32_t i = 0; i < 22; ++i) EncodeExtent(Extent{10 * i, 1000 + i, 10, false}, ext.literal.data() + i * kExtentSize);
  EXPECT_TRUE(enc(ext).ok());
  // Inline extents in file order and disjoint: a lookup searches them by halves.
  InodeCore overlap = ext;
  EncodeExtent(Extent{15, 5000, 10, false}, overlap.literal.data() + 2 * kExtentSize);
  EXPECT_FALSE(enc(overlap).ok());
  InodeCore unordered = ext;
  EncodeExtent(Extent{0, 5000, 5, false}, unordered.literal.data() + 21 * kExtentSize);
  EXPECT_FALSE(enc(unordered).ok());
  EXPECT_TRUE(enc(FreeInode(8, 3)).ok());
}

TEST(Extent, PacksItsFields) {
  char buf[kExtentSize];
  const Extent e{123456789, (1ull << 48) - 1, kMaxExtentLength, true};
  EncodeExtent(e, buf);
  EXPECT_EQ(DecodeExtent(buf), e);
  const Extent f{0, 77, 1, false};
  EncodeExtent(f, buf);
  EXPECT_EQ(DecodeExtent(buf), f);
}

TEST(LocalDir, RoundTripsAndRefusesBadEntries) {
  const std::vector<DirEntry> entries{{10, 8, "a"}, {11, 4, std::string(255, 'x')}};
  std::uint64_t parent = 0;
  std::vector<DirEntry> out;
  ASSERT_TRUE(DecodeLocalDir(EncodeLocalDir(5, entries), &parent, &out).ok());
  EXPECT_EQ(parent, 5u);
  EXPECT_EQ(out, entries);
  const std::string good = EncodeLocalDir(5, {{10, 8, "name"}});
  EXPECT_FALSE(DecodeLocalDir(good.substr(0, good.size() - 1), &parent, &out).ok());
  EXPECT_FALSE(DecodeLocalDir(good.substr(0, 4), &parent, &out).ok());
  for (const char* bad : {".", "..", "a/b"}) {
    std::string s = EncodeLocalDir(5, {{10, 8, "xx"}});
    s = s.substr(0, 8);
    PutFixed64(&s, 10);
    s.push_back(static_cast<char>(std::strlen(bad)));
    s.push_back(8);
    s.append(bad);
    EXPECT_FALSE(DecodeLocalDir(s, &parent, &out).ok()) << bad;
  }
  EXPECT_FALSE(DecodeLocalDir(EncodeLocalDir(5, {{0, 8, "zero"}}), &parent, &out).ok());
}

}  // namespace
}  // namespace walfs::fs::format
