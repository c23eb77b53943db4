// Fixed-width little-endian encoding for on-disk formats (LevelDB
// util/coding.h).  On-disk structures are always built and parsed field by
// field through these helpers, never by memcpy of a struct (STYLE.md rule 6).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

namespace walfs {

// A block's bytes as the char pointer the helpers below take.
inline char* AsChars(std::span<std::byte> b) { return reinterpret_cast<char*>(b.data()); }
inline const char* AsChars(std::span<const std::byte> b) { return reinterpret_cast<const char*>(b.data()); }

// Each value is copied whole and byte-swapped only on a big-endian host (as
// LevelDB's coding.h does): the compiler makes one load or store of it.  A
// byte-at-a-time loop was kept a loop at -O2 -- six instructions a byte, and
// every B+tree key, block header and extent is decoded this way.
template <typename T>
inline T LittleEndian(T v) {
  if constexpr (std::endian::native == std::endian::little) {
    return v;
  } else {  // std::byteswap is C++23
    T out = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) out = static_cast<T>((out << 8) | ((v >> (8 * i)) & 0xff));
    return out;
  }
}

inline void EncodeFixed16(char* dst, std::uint16_t v) {
  v = LittleEndian(v);
  std::memcpy(dst, &v, sizeof(v));
}

inline void EncodeFixed32(char* dst, std::uint32_t v) {
  v = LittleEndian(v);
  std::memcpy(dst, &v, sizeof(v));
}

inline void EncodeFixed64(char* dst, std::uint64_t v) {
  v = LittleEndian(v);
  std::memcpy(dst, &v, sizeof(v));
}

inline std::uint16_t DecodeFixed16(const char* src) {
  std::uint16_t v;
  std::memcpy(&v, src, sizeof(v));
  return LittleEndian(v);
}

inline std::uint32_t DecodeFixed32(const char* src) {
  std::uint32_t v;
  std::memcpy(&v, src, sizeof(v));
  return LittleEndian(v);
}

inline std::uint64_t DecodeFixed64(const char* src) {
  std::uint64_t v;
  std::memcpy(&v, src, sizeof(v));
  return LittleEndian(v);
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
