// SubmitPending: the submitter's half of the two-phase submission
// (submitter/sweep/sweep_store.h): every job of a sweep not yet submitted goes to
// sbatch in order, and a job whose sbatch outcome is unknown is looked up by
// its unique job name before anything could submit it again.
//
// Unknown outcomes: a job left `submitting` by a submitter that died, and an
// sbatch that timed out, was killed or printed no id (SubmitOutcomeUnknown).
// Both are looked up by name (squeue, then sacct); a job found is recorded
// with its id; one not found after an unknown sbatch stays `submitting` and
// the submitter stops, so only a later --resume, after a fresh lookup, can
// submit it again. Only a clean rejection by sbatch returns it to `planned`.
#pragma once

#include <string>

#include "core/base/result.h"
#include "submitter/sweep/slurm_cli.h"
#include "submitter/sweep/sweep_store.h"
#include "submitter/sweep/sweep_files.h"

namespace ix {

Status SubmitPending(SweepStore& store, const std::string& sweep_id, const SweepManifest& m, SlurmCli& cli);

}  // namespace ix
