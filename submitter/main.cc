// ixsubmit: the submitter's command line. Routes each subcommand to its file.
#include <iostream>
#include <string>
#include <vector>

#include "submitter/images_command.h"
#include "submitter/matrix_command.h"
#include "submitter/plan_command.h"
#include "submitter/status_command.h"
#include "submitter/sweep_command.h"
#include "submitter/sweep/sweep_task.h"

namespace {

const char kUsage[] =
    "Usage: ixsubmit COMMAND [OPTIONS]\n"
    "\n"
    "Run InferenceX-style LLM serving benchmarks on a Slurm cluster.\n"
    "\n"
    "Commands:\n"
    "  plan     render a recipe arm at one concurrency into its launch plan\n"
    "  matrix   the InferenceX benchmark matrix from master-config files (full-sweep, test-config)\n"
    "  sweep    submit a sweep: canary, one throttled sbatch array per bucket, fail-fast, watch\n"
    "  status   the sweeps in the database, or the entries of one\n"
    "  task     run one entry of a sweep inside its Slurm job (used by the sweep's scripts)\n"
    "  images   the container images of config rows and their squash files: list, import\n"
    "\n"
    "Run 'ixsubmit COMMAND --help' for the options of a command.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> rest(argv + 2, argv + argc);
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (command == "--version") {
    std::cout << "ixsubmit " IX_VERSION "\n";
    return 0;
  }
  if (command == "plan") return ix::RunPlanCommand(rest);
  if (command == "matrix") return ix::RunMatrixCommand(rest);
  if (command == "sweep") return ix::RunSweepCommand(rest);
  if (command == "status") return ix::RunStatusCommand(rest);
  if (command == "task") return ix::RunTaskCommand(rest);
  if (command == "images") return ix::RunImagesCommand(rest);
  std::cerr << "ixsubmit: unknown command '" << command << "'; commands: plan, matrix, sweep, status, task, images\n"
            << "Try 'ixsubmit --help'.\n";
  return 2;
}
