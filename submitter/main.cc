// ixsubmit: the submitter's command line. Routes each subcommand to its file.
#include <iostream>
#include <string>
#include <vector>

#include "core/base/subcommand.h"
#include "submitter/collector/events_command.h"
#include "submitter/collector/serve_command.h"
#include "submitter/images_command.h"
#include "submitter/matrix_command.h"
#include "submitter/plan_command.h"
#include "submitter/report_command.h"
#include "submitter/results_command.h"
#include "submitter/status_command.h"
#include "submitter/sweep/sweep_task.h"
#include "submitter/sweep_command.h"

int main(int argc, char** argv) {
  const ix::SubcommandTable table = {
      "ixsubmit",
      "Run InferenceX-style LLM serving benchmarks on a Slurm cluster.",
      {
          {"plan", ix::RunPlanCommand, "render a recipe arm at one concurrency into its launch plan"},
          {"matrix", ix::RunMatrixCommand,
           "the InferenceX benchmark matrix from master-config files (full-sweep, test-config)"},
          {"sweep", ix::RunSweepCommand, "submit a sweep: canary, one throttled sbatch array per bucket, fail-fast, watch"},
          {"status", ix::RunStatusCommand, "the sweeps in the database, or the entries of one"},
          {"results", ix::RunResultsCommand,
           "a sweep's results: InferenceX's agg list (as collect_results.py makes it), JSON or CSV"},
          {"report", ix::RunReportCommand, "a sweep as one self-contained HTML report with charts"},
          {"task", ix::RunTaskCommand, "run one entry of a sweep inside its Slurm job (used by the sweep's scripts)"},
          {"images", ix::RunImagesCommand, "the container images of config rows and their squash files: list, import"},
          {"serve", ix::RunServeCommand, "the collector: node agents send events and result files here (HTTP)"},
          {"events", ix::RunEventsCommand, "the events and result files the collector stored"},
      },
      "ixsubmit " IX_VERSION,
  };
  return ix::RunSubcommand(table, std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
