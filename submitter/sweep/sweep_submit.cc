#include "submitter/sweep/sweep_submit.h"

#include <cstdio>
#include <optional>

namespace ix {
namespace {

// The id of the job named `name`, if Slurm (or accounting) knows one; the
// newest when there are several.
Result<std::optional<int64_t>> LookUp(SlurmCli& cli, const std::string& name) {
  Result<std::vector<int64_t>> found = cli.FindJobsByName(name);
  if (!found) return found.error();
  if (found.value().empty()) return std::optional<int64_t>{};
  return std::optional<int64_t>{found.value().back()};
}

}  // namespace

Status SubmitPending(SweepStore& store, const std::string& id, const SweepManifest& m, SlurmCli& cli) {
  const SubmitSettings& s = m.settings;
  Result<std::vector<JobRecord>> pending = store.JobsNeedingSubmission(id);
  if (!pending) return pending.error();
  for (const JobRecord& j : pending.value()) {
    const PlannedJob* pj = nullptr;
    for (const PlannedJob& x : m.plan.jobs) {
      if (x.key == j.key) pj = &x;
    }
    if (!pj) return Error{"sweep " + id + ": job " + j.key + " is not in " + m.sweep_dir + "/sweep.json"};
    if (j.NeedsLookup()) {
      Result<std::optional<int64_t>> found = LookUp(cli, j.job_name);
      if (!found) return found.error();
      if (found.value()) {
        if (Status st = store.MarkSubmitted(id, j.key, *found.value()); !st) return st;
        std::printf("sweep %s: %s was submitted before the interruption as job %lld\n", id.c_str(), j.key.c_str(),
                    static_cast<long long>(*found.value()));
        continue;
      }
      if (Status st = store.AbandonSubmission(id, j.key); !st) return st;
    }
    int64_t dep = 0;
    if (!j.depends_on.empty()) {
      Result<LoadedSweep> l = store.LoadSweep(id);
      if (!l) return l.error();
      const JobRecord* d = l.value().FindJob(j.depends_on);
      if (d && d->slurm_job_id) dep = *d->slurm_job_id;
    }
    Result<JobRecord> marked = store.MarkSubmitting(id, j.key);
    if (!marked) return marked.error();
    std::vector<std::string> args = SbatchArgs(m, *pj, s, dep);
    args.push_back("--comment=" + marked.value().submit_token);
    Result<int64_t> jid = cli.Submit(args, ScriptPath(m, *pj));
    if (!jid && SubmitOutcomeUnknown(jid.error())) {
      // sbatch may have made the job: look for it now; not finding it yet
      // proves nothing (slurmctld may still be taking it), so it stays
      // `submitting` and a resume looks again before submitting it.
      Result<std::optional<int64_t>> found = LookUp(cli, j.job_name);
      if (!found || !found.value()) {
        return Error{jid.error().message + "; " +
                     (found ? "no job named " + j.job_name + " is known yet"
                            : "looking it up by name failed too: " + found.error().message) +
                     ". " + j.key + " stays 'submitting': `ixsubmit sweep --resume " + id +
                     "` looks it up by name again before it submits anything"};
      }
      jid = *found.value();
      std::printf("sweep %s: sbatch's answer for %s was lost; found it by name as job %lld\n", id.c_str(),
                  j.key.c_str(), static_cast<long long>(*found.value()));
    } else if (!jid) {
      (void)store.AbandonSubmission(id, j.key);  // a clean rejection: sbatch made nothing
      return jid.error();
    }
    if (Status st = store.MarkSubmitted(id, j.key, jid.value()); !st) return st;
    std::printf("sweep %s: submitted %s as job %lld (%zu entries%s)\n", id.c_str(), j.key.c_str(),
                static_cast<long long>(jid.value()), pj->entries.size(),
                dep ? (", after job " + std::to_string(dep)).c_str() : "");
  }
  std::fflush(stdout);
  return Ok{};
}

}  // namespace ix
