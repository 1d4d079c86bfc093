#include "submitter/sweep/sweep_mode.h"

#include <array>

namespace ix {
namespace {

struct ModeRow {
  SweepMode mode;
  const char* name;
  SweepModeTraits traits;
};

// The meaning of the InferenceX sweep labels (header comment has the table).
constexpr std::array<ModeRow, 5> kModes{{
    {SweepMode::kSweepEnabled, "sweep-enabled", {true, false, false}},
    {SweepMode::kFullSweepEnabled, "full-sweep-enabled", {false, true, false}},
    {SweepMode::kFullSweepFailFast, "full-sweep-fail-fast", {false, true, true}},
    {SweepMode::kFullSweepFailFastNoCanary, "full-sweep-fail-fast-no-canary", {false, false, true}},
    {SweepMode::kNonCanaryFullSweepEnabled, "non-canary-full-sweep-enabled", {false, false, false}},
}};

const ModeRow& RowOf(SweepMode mode) {
  for (const ModeRow& r : kModes) {
    if (r.mode == mode) return r;
  }
  return kModes[0];  // unreachable for a valid enum value
}

}  // namespace

SweepModeTraits TraitsOf(SweepMode mode) { return RowOf(mode).traits; }

const char* SweepModeName(SweepMode mode) { return RowOf(mode).name; }

const std::vector<SweepMode>& AllSweepModes() {
  static const std::vector<SweepMode> modes = [] {
    std::vector<SweepMode> v;
    for (const ModeRow& r : kModes) v.push_back(r.mode);
    return v;
  }();
  return modes;
}

const std::vector<std::string>& AllSweepModeNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const ModeRow& r : kModes) v.emplace_back(r.name);
    return v;
  }();
  return names;
}

Result<SweepMode> ParseSweepMode(std::string_view name) {
  for (const ModeRow& r : kModes) {
    if (name == r.name) return r.mode;
  }
  std::string allowed;
  for (const ModeRow& r : kModes) allowed += (allowed.empty() ? "" : ", ") + std::string(r.name);
  return Error{"unknown sweep mode '" + std::string(name) + "'; expected one of: " + allowed};
}

}  // namespace ix
