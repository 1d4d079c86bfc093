#include "submitter/status_command.h"

#include <cstdio>
#include <iostream>
#include <optional>

#include "core/process/spawn.h"
#include "submitter/sweep/sweep_container.h"
#include "submitter/sweep/sweep_db.h"
#include "submitter/sweep_command.h"

namespace ix {

int RunStatusCommand(const std::vector<std::string>& args) {
  std::optional<std::string> db, id;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--db" && i + 1 < args.size()) db = args[++i];
    else if (args[i].rfind("--db=", 0) == 0) db = args[i].substr(5);
    else if (args[i] == "--help" || args[i] == "-h") {
      std::cout << "Usage: ixsubmit status [SWEEP_ID] [--db PATH]\n"
                   "Without an id: every sweep in the database; with one: its entries.\n";
      return 0;
    } else if (!id && !args[i].empty() && args[i][0] != '-') id = args[i];
    else return std::cerr << "ixsubmit status: error: unrecognized arguments: " << args[i] << "\n", 2;
  }
  if (Result<std::string> there = ExistingDbPath(db, CurrentEnvironment(), PathExistsOnDisk); !there) {
    return std::cerr << "ixsubmit status: " << there.error().message << "\n", 1;
  }
  Result<SweepStore> store = OpenSweepStore(db);
  if (!store) return std::cerr << "ixsubmit status: " << store.error().message << "\n", 1;
  if (!id) {
    Result<std::vector<SweepSummary>> all = store.value().ListSweeps();
    if (!all) return std::cerr << "ixsubmit status: " << all.error().message << "\n", 1;
    std::printf("%-26s %-32s %-10s %7s %7s %7s %7s %9s  %s\n", "SWEEP", "MODE", "STATE", "ENTRIES", "DONE", "FAILED",
                "RUNNING", "CANCELLED", "DIRECTORY");
    for (const SweepSummary& s : all.value()) {
      std::printf("%-26s %-32s %-10s %7lld %7lld %7lld %7lld %9lld  %s\n", s.sweep.id.c_str(), SweepModeName(s.sweep.mode),
                  StateName(s.sweep.state), static_cast<long long>(s.counts.total()),
                  static_cast<long long>(s.counts.succeeded), static_cast<long long>(s.counts.failed),
                  static_cast<long long>(s.counts.running), static_cast<long long>(s.counts.cancelled + s.counts.skipped),
                  s.sweep.sweep_dir.c_str());
    }
    return 0;
  }
  Result<LoadedSweep> l = store.value().LoadSweep(*id);
  if (!l) return std::cerr << "ixsubmit status: " << l.error().message << "\n", 1;
  std::printf("sweep %s (%s): %s, %s\n", id->c_str(), SweepModeName(l.value().sweep.mode),
              StateName(l.value().sweep.state), l.value().sweep.sweep_dir.c_str());
  std::printf("%5s %-14s %-42s %-14s %5s %-10s %-10s %5s  %s\n", "ENTRY", "BUCKET", "CONFIG KEY", "ARM", "CONC", "STATE",
              "TASK", "EXIT", "REASON");
  for (const EntryRecord& e : l.value().entries) {
    std::printf("%5lld %-14s %-42s %-14s %5lld %-10s %-10s %5s  %s%s%s\n", static_cast<long long>(e.index),
                e.bucket.c_str(), e.config_key.c_str(), e.arm.c_str(), static_cast<long long>(e.conc),
                StateName(e.state), e.slurm_task_id.c_str(), e.exit_code ? std::to_string(*e.exit_code).c_str() : "-",
                e.failure_process.c_str(), e.failure_process.empty() ? "" : ": ", e.failure_reason.c_str());
  }
  return 0;
}

}  // namespace ix
