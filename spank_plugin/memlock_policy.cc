#include "spank_plugin/memlock_policy.h"

namespace ix {
namespace {

bool Covers(const MemlockLimit& have, const MemlockLimit& want) {
  return have.unlimited || (!want.unlimited && have.bytes >= want.bytes);
}

}  // namespace

std::string DescribeMemlockSetting(const MemlockSetting& site) {
  switch (site.mode) {
    case MemlockSetting::Mode::kUnlimited: return "unlimited";
    case MemlockSetting::Mode::kKeep: return "keep";
    case MemlockSetting::Mode::kBytes: return std::to_string(site.bytes);
  }
  return "?";
}

MemlockDecision DecideMemlock(const std::string& pinned, const MemlockSetting& site,
                              const std::optional<MemlockLimit>& current) {
  MemlockDecision d;
  d.tasks_limit = current;
  if (pinned.empty()) {
    d.reason = "the recipe pins no host memory: RLIMIT_MEMLOCK left as it is";
    return d;
  }
  const std::string why = "the recipe pins host memory (" + pinned + ")";
  if (site.mode == MemlockSetting::Mode::kKeep) {
    d.reason = why + ", but memlock=keep: RLIMIT_MEMLOCK left as it is";
    return d;
  }
  MemlockLimit cap;
  cap.unlimited = site.mode == MemlockSetting::Mode::kUnlimited;
  cap.bytes = cap.unlimited ? 0 : site.bytes;
  const std::string setting = "memlock=" + DescribeMemlockSetting(site);
  if (current && Covers(*current, cap)) {
    d.reason = why + ": RLIMIT_MEMLOCK is " + DescribeMemlock(*current) + " already, at least the site's " + setting;
    return d;
  }
  d.raise_to = cap;
  d.tasks_limit = cap;
  d.basis = why;
  d.reason = why + ": RLIMIT_MEMLOCK raised to " + DescribeMemlock(cap) + " (" + setting + ")";
  return d;
}

void RecordRaiseFailure(MemlockDecision& decision, const std::optional<MemlockLimit>& actual,
                        const std::string& error) {
  if (!decision.raise_to) return;
  decision.reason = decision.basis + ": raising RLIMIT_MEMLOCK to " + DescribeMemlock(*decision.raise_to) +
                    " failed (" + error + "), so the tasks keep " +
                    (actual ? DescribeMemlock(*actual) : std::string("an unknown limit"));
  decision.raise_to.reset();
  decision.tasks_limit = actual;
}

}  // namespace ix
