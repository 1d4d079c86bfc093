// Test-only builders of sweeps for the tests of what runs one (the driver,
// the collector's stream): plans of plain entries, and a sweep recorded in
// a fresh store on the fake Slurm.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>

#include "submitter/sweep/sweep_driver.h"
#include "submitter/sweep/sweep_files.h"
#include "submitter/sweep/sweep_plan.h"
#include "tests/support/fake_slurm_cli.h"
#include "tests/support/test.h"

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

// A sweep of plain entries recorded in a fresh store (Record, after the
// jobs are added), the fake Slurm it runs on (job ids 1001, 1002, ... in
// submission order), and watch hooks whose clock moves one second per
// pause. Invariant: `out` is open from Record until destruction.
struct RecordedSweep {
  TempDir dir;
  SweepManifest m;
  std::optional<SweepStore> store;
  FakeSlurmCli slurm;
  std::string id = "sw-20260101-000000-0001";
  double clock = 1000;
  int pauses = 0;
  int ctrl_c_at = -1;  // the pause at which the user presses Ctrl-C
  bool cancel_on_ctrl_c = false;
  bool asked = false;
  bool redraw = false;
  std::FILE* out = nullptr;

  RecordedSweep(const std::string& dir_name, bool fail_fast) : dir(dir_name) {
    m.sweep_id = id;
    m.sweep_dir = dir.path();
    m.fail_fast = fail_fast;
  }
  ~RecordedSweep() {
    if (out) std::fclose(out);
  }
  RecordedSweep(const RecordedSweep&) = delete;
  RecordedSweep& operator=(const RecordedSweep&) = delete;

  std::string DbPath() const { return dir.path() + "/ix.db"; }
  // The job "canary", "bucket:NAME" or "bucket:NAME#2" with `entries` plain
  // entries of `config_key`; a bucket depends on the canary when there is one.
  void AddJob(const std::string& key, int entries, const std::string& config_key) {
    PlannedJob j;
    j.key = key;
    j.canary = key == "canary";
    j.bucket = j.canary ? "canary" : BucketOfJobKey(key);
    j.gpus = 4;
    if (!j.canary && !m.plan.jobs.empty() && m.plan.jobs[0].canary) j.depends_on = "canary";
    AddPlainEntries(m, j, entries, config_key);
    m.plan.jobs.push_back(j);
  }
  void Record() {
    store.emplace(std::move(SweepStore::Open(DbPath()).value()));
    EXPECT_EQ(store->CreateSweep(SweepRecordOf(m, SweepMode::kFullSweepFailFast, {"sweep"})).value(), id);
    out = std::fopen((dir.path() + "/out.txt").c_str(), "w");
  }
  WatchHooks Hooks() {
    WatchHooks h;
    h.now = [this] { return clock; };
    h.pause = [this] {
      ++pauses;
      clock += 1;
      return pauses == ctrl_c_at || pauses > 100;  // a runaway watch ends as a Ctrl-C
    };
    h.confirm_cancel = [this](const std::string&) {
      asked = true;
      return cancel_on_ctrl_c;
    };
    h.redraw = redraw;
    h.out = out;
    return h;
  }
};

}  // namespace ix::test
