// Fixed-width little-endian encoding for on-disk formats (LevelDB
// util/coding.h).  On-disk structures are always built and parsed field by
// field through these helpers, never by memcpy of a struct (STYLE.md rule 6).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace walfs {

inline void EncodeFixed16(char* dst, std::uint16_t v) {
  auto* p = reinterpret_cast<unsigned char*>(dst);
  p[0] = static_cast<unsigned char>(v);
  p[1] = static_cast<unsigned char>(v >> 8);
}

inline void EncodeFixed32(char* dst, std::uint32_t v) {
  auto* p = reinterpret_cast<unsigned char*>(dst);
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

inline void EncodeFixed64(char* dst, std::uint64_t v) {
  auto* p = reinterpret_cast<unsigned char*>(dst);
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

inline std::uint16_t DecodeFixed16(const char* src) {
  auto* p = reinterpret_cast<const unsigned char*>(src);
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}

inline std::uint32_t DecodeFixed32(const char* src) {
  auto* p = reinterpret_cast<const unsigned char*>(src);
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline std::uint64_t DecodeFixed64(const char* src) {
  auto* p = reinterpret_cast<const unsigned char*>(src);
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline void PutFixed16(std::string* dst, std::uint16_t v) {
  char buf[2];
  EncodeFixed16(buf, v);
  dst->append(buf, sizeof(buf));
}

inline void PutFixed32(std::string* dst, std::uint32_t v) {
  char buf[4];
  EncodeFixed32(buf, v);
  dst->append(buf, sizeof(buf));
}

inline void PutFixed64(std::string* dst, std::uint64_t v) {
  char buf[8];
  EncodeFixed64(buf, v);
  dst->append(buf, sizeof(buf));
}

}  // namespace walfs
