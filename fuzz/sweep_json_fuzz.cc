// libFuzzer target for sweep.json (submitter/sweep/sweep_files.h
// SweepManifestFromJson, what ReadSweepManifest does with the file): the
// plan of a sweep, read back by every array task and by a resumed
// submitter. A manifest that loads is then used the way they use it: job
// names, script paths, result directories and sbatch arguments of each job.
// Errors are expected; crashes, leaks, UB and hangs are bugs, and so is an
// error that does not name the file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "submitter/sweep/sweep_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ix::Result<ix::SweepManifest> m = ix::SweepManifestFromJson(std::string(ixfuzz::AsText(data, size)), "sweep.json");
  if (!m) {
    ixfuzz::Check(m.error().message.find("sweep.json") != std::string::npos,
                  "an error that does not name the file: " + m.error().message);
    return 0;
  }
  const ix::SweepManifest& s = m.value();
  size_t total = 0;
  for (const ix::PlannedJob& job : s.plan.jobs) {
    total += ix::JobName(s, job).size() + ix::ScriptPath(s, job).size();
    total += ix::SbatchArgs(s, job, s.settings, 0).size() + ix::SbatchArgs(s, job, s.settings, -1).size();
  }
  for (const ix::PlannedEntry& e : s.plan.entries) total += ix::ResultDir(s, e.index).size();
  return total == SIZE_MAX ? 1 : 0;
}
