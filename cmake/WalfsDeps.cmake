# Every dependency comes from a Debian package (scripts/setup.sh installs them).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED)             # Boost.Intrusive (header-only)
find_package(GTest REQUIRED)
include(GoogleTest)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
pkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)   # CRC32C (crc32_iscsi)
pkg_check_modules(URING REQUIRED IMPORTED_TARGET liburing) # BlockDevice io_uring engine
pkg_check_modules(BLKID REQUIRED IMPORTED_TARGET blkid)   # mkfs: refuse to overwrite another filesystem
pkg_check_modules(UUID REQUIRED IMPORTED_TARGET uuid)     # mkfs: the filesystem UUID
