// The FUSE-over-io_uring protocol (kernel 6.14+, protocol 7.42;
// include/uapi/linux/fuse.h, Documentation/filesystems/fuse-io-uring.rst),
// which Debian 12's <linux/fuse.h> predates: the INIT flag, the per-entry
// header buffer and the command in an SQE128's command area.  Written from
// the kernel's definitions; the static_asserts hold the layout to them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace walfs::mount::fuse_uring {

// INIT flag bit 41 (FUSE_OVER_IO_URING): bits 32..63 travel in flags2.
inline constexpr std::uint64_t kOverIoUring = 1ull << 41;

inline constexpr std::size_t kInOutHeaderSize = 128;  // FUSE_URING_IN_OUT_HEADER_SZ
inline constexpr std::size_t kOpInSize = 128;         // FUSE_URING_OP_IN_OUT_SZ

struct EntInOut {  // struct fuse_uring_ent_in_out
  std::uint64_t flags;
  std::uint64_t commit_id;   // the request's unique: what a commit names
  std::uint32_t payload_sz;  // bytes in the payload buffer, either way
  std::uint32_t padding;
  std::uint64_t reserved;
};

// struct fuse_uring_req_header: iov[0] of a registration.  On a request,
// in_out holds the fuse_in_header and op_in the request's first argument
// (its per-opcode struct; nothing for opcodes whose first argument is
// empty); the other arguments are in the payload buffer.  On a reply,
// in_out holds the fuse_out_header and every reply argument goes in the
// payload buffer.
struct ReqHeader {
  char in_out[kInOutHeaderSize];
  char op_in[kOpInSize];
  EntInOut ring_ent_in_out;
};

enum Cmd : std::uint32_t {  // enum fuse_uring_cmd: the SQE's cmd_op
  kCmdRegister = 1,         // FUSE_IO_URING_CMD_REGISTER: give the kernel an entry, fetch a request
  kCmdCommitAndFetch = 2,   // FUSE_IO_URING_CMD_COMMIT_AND_FETCH: reply, and fetch the next
};

struct CmdReq {  // struct fuse_uring_cmd_req, in the SQE128's 80-byte command area
  std::uint64_t flags;
  std::uint64_t commit_id;  // 0 on a registration
  std::uint16_t qid;        // the queue: one per possible CPU
  std::uint8_t padding[6];
};

static_assert(sizeof(EntInOut) == 32);
static_assert(offsetof(ReqHeader, op_in) == 128);
static_assert(offsetof(ReqHeader, ring_ent_in_out) == 256);
static_assert(sizeof(ReqHeader) == 288);
static_assert(sizeof(CmdReq) == 24);

}  // namespace walfs::mount::fuse_uring
