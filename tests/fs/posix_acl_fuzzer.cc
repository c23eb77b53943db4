// libFuzzer target: the POSIX ACL xattr decoder.  What it accepts must
// re-encode to the same value (ids of unnamed entries aside, which the
// decoder drops) and survive the mode rules.
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "fs/posix_acl.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace walfs::fs;
  const std::string_view value(reinterpret_cast<const char*>(data), size);
  auto acl = DecodeAcl(value);
  if (!acl.ok()) return 0;
  const std::string encoded = EncodeAcl(*acl);
  WALFS_CHECK(encoded.size() == value.size());
  auto again = DecodeAcl(encoded);
  WALFS_CHECK(again.ok() && *again == *acl);
  std::uint32_t mode = S_IFREG | 0777;
  (void)UpdateModeFromAcl(*acl, &mode);
  Acl chmodded = *acl;
  ChmodAcl(&chmodded, mode);
  WALFS_CHECK(DecodeAcl(EncodeAcl(chmodded)).ok());
  const InheritedAcl inh = InheritAcl(*acl, S_IFDIR | 0777);
  if (inh.access) WALFS_CHECK(DecodeAcl(EncodeAcl(*inh.access)).ok());
  return 0;
}
