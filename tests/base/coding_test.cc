#include "base/coding.h"

#include <gtest/gtest.h>

namespace walfs {
namespace {

TEST(Coding, FixedWidthFieldsAreLittleEndian) {
  char buf[8];
  EncodeFixed32(buf, 0x04030201u);
  EXPECT_EQ(buf[0], 1);
  EXPECT_EQ(buf[3], 4);
  EncodeFixed64(buf, 0x0807060504030201ull);
  EXPECT_EQ(buf[7], 8);
  EncodeFixed16(buf, 0x0201);
  EXPECT_EQ(buf[0], 1);
  EXPECT_EQ(buf[1], 2);
}

TEST(Coding, RoundTripsExtremeValues) {
  std::string s;
  for (std::uint64_t v : {0ull, 1ull, 0xffull, 0x8000000000000000ull, ~0ull}) {
    s.clear();
    PutFixed64(&s, v);
    PutFixed32(&s, static_cast<std::uint32_t>(v));
    PutFixed16(&s, static_cast<std::uint16_t>(v));
    ASSERT_EQ(s.size(), 14u);
    EXPECT_EQ(DecodeFixed64(s.data()), v);
    EXPECT_EQ(DecodeFixed32(s.data() + 8), static_cast<std::uint32_t>(v));
    EXPECT_EQ(DecodeFixed16(s.data() + 12), static_cast<std::uint16_t>(v));
  }
}

}  // namespace
}  // namespace walfs
