// SweepFiles: the sweep directory, which holds everything a sweep's jobs
// need and leave behind: sweep.json (the plan: entries with recipe, arm,
// concurrency, image and node count, the client command, fail-fast, the
// sbatch and container settings, and the multinode entries "skipped" with
// their reasons), one batch script per job,
// logs/ (Slurm's %x_%A_%a output files) and results/INDEX/ (each entry's
// step results, status.json). The array tasks read sweep.json by
// SLURM_ARRAY_TASK_ID, so the sweep directory must be on a file system the
// compute nodes share.
//
// Invariants: paths are absolute; a script only execs `ixsubmit task` with
// quoted fixed arguments (no user text reaches a shell unquoted).
#pragma once

#include <string>
#include <vector>

#include "core/base/result.h"
#include "submitter/sweep/client_command.h"
#include "submitter/sweep/container_args.h"
#include "submitter/sweep/sweep_plan.h"

namespace ix {

// What sbatch gets besides the plan.
struct SubmitSettings {
  std::string partition, account, time_limit;  // "" = the cluster's default
  bool exclusive = false;
  int64_t throttle = 4;  // --array=...%throttle; 0 = no limit
};

// How a sweep's tasks report to the node agent and, through it, to the
// sweep's collector. Empty strings: not used. With `node_result_dir`, each
// entry's step writes its results on the node (NODE_RESULT_DIR/SWEEP/INDEX)
// and they reach results/INDEX/ in the sweep directory only through the
// collector.
struct StreamSettings {
  std::string agent_socket = "/run/inferencex/agent.sock";
  std::string collector_listen;  // "ADDR:PORT" the collector got at the first submit; --resume binds it
  std::string collector_url;  // "http://submit-host:PORT"; "" = no collector
  std::string token_file;     // the sweep's collector token (0600, the user's)
  std::string node_result_dir;
};

// Everything sweep.json holds: the sweep's identity, how its tasks run, and
// its plan. Invariants once read (checked): entry i has index i; a job's
// entries are entries of the plan; a job other than the canary is an array
// named bucket:NAME with at least one entry.
struct SweepManifest {
  std::string sweep_id;
  std::string sweep_dir;
  std::string ixsubmit;  // the program the scripts exec
  std::string recipe_dir;
  bool fail_fast = false;
  bool dry_run = false;  // written by --dry-run: nothing reads it, a real sweep may take the directory
  std::vector<std::string> client;  // the step's client argv; empty: each entry's own (entry_client.h)
  ClientDefaults client_defaults;   // how entries' own clients are built
  SubmitSettings settings;          // kept, so a resumed submitter submits the same way
  ContainerSettings container;      // what every task's step runs in; kept the same way
  StreamSettings stream;            // events and results through the node agent
  // Every step's --inferencex-hang-after: seconds, "off", or "" for the
  // recipe's own hang.after.
  std::string hang_after;
  SweepPlan plan;
};

std::string ScriptPath(const SweepManifest& m, const PlannedJob& job);
// An entry's results as the submitter reads them (results/INDEX in the sweep
// directory) and where its task writes them (the same, or on the node).
std::string ResultDir(const SweepManifest& m, int64_t index);
std::string TaskResultDir(const SweepManifest& m, int64_t index);
// `ix-SWEEP-BUCKET-KEY`: unique per sweep, so a resumed submitter can find
// a job it submitted by name.
std::string JobName(const SweepManifest& m, const PlannedJob& job);

// Writes sweep.json, the scripts and the logs/ and results/ directories.
Status WriteSweepFiles(const SweepManifest& m);
// Reads `sweep_dir`/sweep.json.
Result<SweepManifest> ReadSweepManifest(const std::string& sweep_dir);
// The same from the text of a sweep.json; `where` names it in errors.
Result<SweepManifest> SweepManifestFromJson(const std::string& text, const std::string& where);

// sbatch's arguments for one job (without --parsable and the script):
// --nodes=N with --ntasks=1 on one node, --ntasks-per-node=1 across nodes,
// --gres=gpu:G per node; the
// dependency given as the canary's job id (0 = none; < 0 = a placeholder,
// for --dry-run).
std::vector<std::string> SbatchArgs(const SweepManifest& m, const PlannedJob& job, const SubmitSettings& s,
                                    int64_t depends_on_job_id);

}  // namespace ix
