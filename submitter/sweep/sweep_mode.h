// SweepMode: the five sweep modes of the InferenceX sweep labels, and what
// each one switches on. Names are the labels exactly as InferenceX spells
// them; the table in sweep_mode.cc is the only place the meaning lives.
//
//   mode                             trim_conc  canary  fail_fast
//   sweep-enabled                    yes        no      no
//   full-sweep-enabled               no         yes     no
//   full-sweep-fail-fast             no         yes     yes
//   full-sweep-fail-fast-no-canary   no         no      yes
//   non-canary-full-sweep-enabled    no         no      no
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace ix {

enum class SweepMode : uint8_t {
  kSweepEnabled,
  kFullSweepEnabled,
  kFullSweepFailFast,
  kFullSweepFailFastNoCanary,
  kNonCanaryFullSweepEnabled,
};

// What a mode does. trim_conc: each parallelism config keeps only its
// lowest concurrency (MakeBuckets' trim_conc); canary: one canary job runs
// first and every bucket array depends on it (afterok); fail_fast: the first
// failed task of a bucket cancels the rest of that bucket's array.
struct SweepModeTraits {
  bool trim_conc = false;
  bool canary = false;
  bool fail_fast = false;
};

SweepModeTraits TraitsOf(SweepMode mode);
// The label, e.g. "full-sweep-fail-fast"; never null.
const char* SweepModeName(SweepMode mode);
// Every mode, in the order of the table above.
const std::vector<SweepMode>& AllSweepModes();
// Every label, in the same order.
const std::vector<std::string>& AllSweepModeNames();
// The mode called `name` (exact, case-sensitive). An unknown name errors
// with the allowed names: "unknown sweep mode 'x'; expected one of: ...".
Result<SweepMode> ParseSweepMode(std::string_view name);

}  // namespace ix
