#include "submitter/sweep/sweep_id.h"

#include <cstdio>
#include <ctime>
#include <random>

namespace ix {

std::string NewSweepId(double now) {
  const std::time_t t = static_cast<std::time_t>(now);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  // random_device on every call: forked processes must not share a sequence.
  std::random_device rng;
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%04x", static_cast<unsigned>(rng() & 0xffff));
  return std::string("sw-") + stamp + "-" + suffix;
}

}  // namespace ix
