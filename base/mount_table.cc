#include "base/mount_table.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace walfs {

std::string UnescapeMountField(const std::string& s) {
  auto octal = [](char c) { return c >= '0' && c <= '7'; };
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && octal(s[i + 1]) && octal(s[i + 2]) && octal(s[i + 3])) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<MountEntry> ReadMountTable() {
  std::vector<MountEntry> out;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root point options [optional fields] - fstype source super-options
    std::istringstream fields(line);
    std::string id, parent, devno, root, point;
    fields >> id >> parent >> devno >> root >> point;
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream rest(line.substr(dash + 3));
    MountEntry e;
    rest >> e.fstype >> e.source;
    e.point = UnescapeMountField(point);
    e.root = UnescapeMountField(root);
    if (std::sscanf(devno.c_str(), "%u:%u", &e.major, &e.minor) != 2) continue;
    e.source = UnescapeMountField(e.source);
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<MountEntry> TopMountAt(const std::string& point) {
  std::optional<MountEntry> top;
  for (MountEntry& e : ReadMountTable())
    if (e.point == point) top = std::move(e);
  return top;
}

}  // namespace walfs
