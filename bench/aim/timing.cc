#include "bench/aim/timing.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace walfs::bench::aim {

Spread ChildSpread(const std::vector<double>& elapsed_s) {
  WALFS_CHECK_MSG(!elapsed_s.empty(), "a load level has at least one user");
  Spread s;
  const double n = static_cast<double>(elapsed_s.size());
  double sum = 0, sumsq = 0;
  s.max_s = elapsed_s.front();
  s.min_s = elapsed_s.front();
  for (double e : elapsed_s) {
    sum += e;
    sumsq += e * e;
    s.max_s = std::max(s.max_s, e);
    s.min_s = std::min(s.min_s, e);
  }
  s.mean_s = sum / n;
  if (elapsed_s.size() == 1) {
    s.jti = 100;
    return s;
  }
  // re-aim's formula, sqrt((sumsq - sum^2 / n) / n); rounding can make the
  // difference a hair negative when all times are equal.
  s.std_dev_s = std::sqrt(std::max(0.0, (sumsq - sum * sum / n) / n));
  const double cov = sum == 0 ? 0.0 : s.std_dev_s / s.mean_s;
  s.jti = cov > 1.0 ? 0 : static_cast<int>((1.0 - cov) * 100.0);
  return s;
}

double JobsPerMinute(int jobs_per_user, int users, double real_s) {
  return real_s > 0 ? jobs_per_user * 60.0 * users / real_s : 0.0;
}

double JobsPerMinutePerChild(int jobs_per_user, double real_s) {
  return real_s > 0 ? jobs_per_user * 60.0 / real_s : 0.0;
}

}  // namespace walfs::bench::aim
