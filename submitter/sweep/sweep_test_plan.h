// Test-only builders of sweep plans, for the tests of what runs a sweep
// (the driver, the collector's stream): jobs filled with plain entries.
#pragma once

#include <string>

#include "submitter/sweep/sweep_files.h"
#include "submitter/sweep/sweep_plan.h"

namespace ix::test {

// Appends `n` entries to job `j` and to `m`'s plan: tp4 at conc 8 of recipe
// "r" and `config_key`, indexed in plan order, array indices 0..n-1.
inline void AddPlainEntries(SweepManifest& m, PlannedJob& j, int n, const std::string& config_key) {
  for (int i = 0; i < n; ++i) {
    PlannedEntry e;
    e.index = static_cast<int64_t>(m.plan.entries.size());
    e.job_key = j.key;
    e.array_index = i;
    e.bucket = j.bucket;
    e.config_key = config_key;
    e.recipe = "r";
    e.arm = "tp4";
    e.conc = 8;
    j.entries.push_back(e.index);
    m.plan.entries.push_back(e);
  }
}

}  // namespace ix::test
