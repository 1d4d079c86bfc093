// SweepDir: who may use a sweep directory.
//
// One submitter per sweep: LockSweepDir takes an flock on DIR/submitter.lock
// for as long as the submitter runs (the kernel drops it when the process
// dies, even by SIGKILL, so a killed submitter never blocks a --resume). A
// second submitter, on this host or (where the file system has working
// flock, as NFSv4 does) another, fails at once with the holder's pid and
// host, which the holder writes into the file.
//
// One sweep per directory: ClaimSweepDir refuses a directory whose
// sweep.json belongs to another sweep that is not finished (its array tasks
// read sweep.json by index: overwriting it would run the wrong entries), and
// moves a finished sweep's results/ and logs/ aside to results.OLD_ID/ and
// logs.OLD_ID/, so its status.json files are never read as the new sweep's
// outcomes (status.json also names its sweep; ReadTaskStatus checks it).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "core/base/result.h"
#include "core/base/unique_fd.h"
#include "submitter/sweep/sweep_store.h"

namespace ix {

// The flock on DIR/submitter.lock, held for as long as this lives (closing
// the file drops it). Invariant: `file` holds the locked file, or nothing.
// Move-only, as its UniqueFd is.
struct SweepLock {
  UniqueFd file;
};

// Locks `dir` (which must exist) for sweep `sweep_id`. Tries until
// `deadline` passes (a lock whose holder is just exiting), then fails naming
// the sweep, the lock file and what the holder wrote ("pid 123 on host h").
Result<SweepLock> LockSweepDir(const std::string& dir, const std::string& sweep_id,
                               std::chrono::milliseconds deadline = std::chrono::milliseconds(1000));

// The state of a sweep in the database; nullopt when it has none of that id.
using SweepStateLookup = std::function<std::optional<SweepState>(const std::string& sweep_id)>;
// Whether Slurm knows a job of this name (SlurmCli::FindJobsByName).
using JobNameLookup = std::function<Result<bool>(const std::string& job_name)>;

// Makes `dir` ready for sweep `sweep_id` (call it holding the lock): fine
// when it has no sweep.json, or one of `sweep_id` itself, or of a dry run;
// an error naming both sweeps when the other is submitting or running, or
// unknown to this database (another --db) while Slurm knows one of its job
// names; otherwise the other sweep's results/ and logs/ are moved aside. (A
// sweep unknown to the database and to Slurm is one whose submission stopped
// before sbatch, e.g. at `sbatch --test-only`: rerunning into it is fine.)
Status ClaimSweepDir(const std::string& dir, const std::string& sweep_id, const SweepStateLookup& state_of,
                     const JobNameLookup& in_slurm);

}  // namespace ix
