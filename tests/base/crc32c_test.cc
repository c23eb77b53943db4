#include "base/crc32c.h"

#include <random>
#include <string>

#include <boost/crc.hpp>
#include <gtest/gtest.h>

namespace walfs {
namespace {

// An independent table-driven CRC32C to check the accelerated one against.
std::uint32_t ReferenceCrc32c(const std::string& s) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(s.data(), s.size());
  return crc.checksum();
}

TEST(Crc32c, MatchesTheStandardCheckValue) {
  EXPECT_EQ(crc32c::Value("123456789", 9), 0xe3069283u);
  EXPECT_EQ(crc32c::Value("", 0), 0u);
}

TEST(Crc32c, MatchesRfc3720Vectors) {
  std::string zeros(32, '\0'), ones(32, '\xff');
  EXPECT_EQ(crc32c::Value(zeros.data(), zeros.size()), 0x8a9136aau);
  EXPECT_EQ(crc32c::Value(ones.data(), ones.size()), 0x62a8ab43u);
}

TEST(Crc32c, ExtendEqualsValueOfConcatenation) {
  std::mt19937 rng(7);
  for (int len : {1, 7, 64, 4095, 32768}) {
    std::string s(len, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    const std::size_t cut = s.size() / 3;
    std::uint32_t a = crc32c::Value(s.data(), cut);
    a = crc32c::Extend(a, s.data() + cut, s.size() - cut);
    EXPECT_EQ(a, crc32c::Value(s.data(), s.size()));
    EXPECT_EQ(a, ReferenceCrc32c(s)) << "len " << len;
  }
}

TEST(Crc32c, MaskRoundTripsAndChangesTheValue) {
  const std::uint32_t crc = crc32c::Value("foo", 3);
  EXPECT_NE(crc32c::Mask(crc), crc);
  EXPECT_NE(crc32c::Mask(crc32c::Mask(crc)), crc);
  EXPECT_EQ(crc32c::Unmask(crc32c::Mask(crc)), crc);
}

}  // namespace
}  // namespace walfs
