#include "tools/log_bar.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "journal/log_format.h"
#include "journal/lsn.h"

namespace walfs::tracing {

namespace {

bool ParseLsn(std::string_view s, journal::Lsn* out) {
  const std::size_t colon = s.find(':');
  if (colon == std::string_view::npos) return false;
  std::uint32_t cycle = 0, sector = 0;
  const char* end = s.data() + s.size();
  auto [p1, e1] = std::from_chars(s.data(), s.data() + colon, cycle);
  auto [p2, e2] = std::from_chars(s.data() + colon + 1, end, sector);
  if (e1 != std::errc() || p1 != s.data() + colon || e2 != std::errc() || p2 != end) return false;
  *out = journal::MakeLsn(cycle, sector);
  return true;
}

int Cell(double bytes, double size, int width) {
  return std::clamp(static_cast<int>(std::lround(bytes / size * width)), 0, width);
}

}  // namespace

std::uint64_t BytesPastTail(std::string_view tail, std::string_view target, std::uint64_t log_bytes) {
  journal::Lsn t = 0, g = 0;
  if (log_bytes == 0 || !ParseLsn(tail, &t) || !ParseLsn(target, &g) || g <= t) return 0;
  // One cycle is the whole log; a target more than a cycle ahead cannot be.
  const std::uint64_t cycles = journal::CycleOf(g) - journal::CycleOf(t);
  const std::int64_t sectors = static_cast<std::int64_t>(journal::SectorOf(g)) - journal::SectorOf(t);
  const std::int64_t bytes = static_cast<std::int64_t>(cycles * log_bytes) + sectors * journal::kLogSectorSize;
  return bytes <= 0 ? 0 : std::min<std::uint64_t>(static_cast<std::uint64_t>(bytes), log_bytes);
}

std::string LogBar(const LogPicture& log, int width) {
  if (log.size <= 0 || width <= 0) return std::string(static_cast<std::size_t>(std::max(width, 0)), '?');
  const int t = Cell(log.tail_space, log.size, width);
  const int g = std::max(t, Cell(log.tail_space + log.grant, log.size, width));
  std::string bar = std::string(static_cast<std::size_t>(t), '#') + std::string(static_cast<std::size_t>(g - t), '=') +
                    std::string(static_cast<std::size_t>(width - g), '.');
  if (log.target_past_tail > 0 && t > 0) {
    // The cell the target falls in, never past the written part.
    const int a = std::clamp(Cell(log.target_past_tail, log.size, width), 1, t);
    bar[static_cast<std::size_t>(a - 1)] = '|';
  }
  return bar;
}

}  // namespace walfs::tracing
