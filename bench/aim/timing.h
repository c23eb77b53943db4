// re-aim's numbers for one load level, from the per-user elapsed times.
//
// Every user (child) starts at the same instant; its elapsed time runs to its
// end.  With n users, each of J jobs, and a real time R (start to the last
// child reaped):
//
//   jobs/min        = J * n * 60 / R
//   jobs/min/child  = J * 60 / R
//   std_dev         = population standard deviation of the elapsed times
//   JTI             = (1 - std_dev / mean) * 100, truncated to an integer;
//                     100 for one user, 0 when std_dev exceeds the mean.
//
// JTI, the job timing index, says how evenly the users were served: 100 when
// all finished together.  re-aim computes it as `(int) cov > 1.0 ? 0.0 :
// (1 - cov) * 100` into an int, which only clamps once cov reaches 2 (and
// goes negative between 1 and 2); walfs-aim clamps from cov > 1 on.
#pragma once

#include <vector>

namespace walfs::bench::aim {

struct Spread {
  double mean_s = 0;
  double std_dev_s = 0;
  double max_s = 0;
  double min_s = 0;
  int jti = 0;
};

// Requires a non-empty `elapsed_s`.
Spread ChildSpread(const std::vector<double>& elapsed_s);

double JobsPerMinute(int jobs_per_user, int users, double real_s);
double JobsPerMinutePerChild(int jobs_per_user, double real_s);

}  // namespace walfs::bench::aim
