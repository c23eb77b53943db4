// The CPU tests of the fserver mix that walfs-aim reproduces, selected with
// --with-cpu as the think time between file operations.  Loop bodies and
// counts are re-aim-7's (add.c, mul.c, div.c, creat_clo.c, ram.c):
//
//   add_int/add_long 5,000,000 and add_short 2,000,000 loops of 12 additions;
//   mul_int/mul_long 20,000 and mul_short 25,000 loops of 12 multiplies;
//   div_int/div_long/div_short 75,000 loops of 12 divides;
//   jmp_test 1000 setjmp()s, each longjmp()ed to from 10 calls deep;
//   signal_test 1000 SIGUSR2s sent to itself and caught;
//   ram_copy 64 memcpy()s of varying size and alignment.
//
// The other eight CPU tests of the workfile (dir_rtns_1, mem_rtns_1/2,
// misc_rtns_1, sort_rtns_1, string_rtns, tcp_test, udp_test) are not
// reproduced; workfile.cc marks them and docs/aim.md says why.
#pragma once

#include <string_view>

#include "base/status.h"

namespace walfs::bench::aim {

using CpuTestFn = Status (*)();

// The CPU test called `name` ("add_int"), or nullptr.
CpuTestFn FindCpuTest(std::string_view name);

}  // namespace walfs::bench::aim
