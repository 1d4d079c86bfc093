// ixsubmit: the submitter's command line. Routes each subcommand to its file.
#include <iostream>
#include <string>
#include <vector>

#include "submitter/matrix_command.h"
#include "submitter/plan_command.h"

namespace {

const char kUsage[] =
    "Usage: ixsubmit COMMAND [OPTIONS]\n"
    "\n"
    "Run InferenceX-style LLM serving benchmarks on a Slurm cluster.\n"
    "\n"
    "Commands:\n"
    "  plan     render a recipe arm at one concurrency into its launch plan\n"
    "  matrix   the InferenceX benchmark matrix from master-config files (full-sweep, test-config)\n"
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
  std::cerr << "ixsubmit: unknown command '" << command << "'; commands: plan, matrix\n"
            << "Try 'ixsubmit --help'.\n";
  return 2;
}
