#include "submitter/matrix_command.h"

#include <boost/program_options.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>

#include "core/matrix/matrix.h"
#include "core/matrix/matrix_buckets.h"
#include "core/matrix/matrix_config.h"
#include "core/matrix/matrix_json.h"
#include "core/matrix/matrix_runners.h"
#include "submitter/matrix_options.h"

namespace ix {
namespace po = boost::program_options;

namespace {

const char kUsage[] =
    "Usage: ixsubmit matrix full-sweep --config-files FILE... --runner-config FILE [OPTIONS]\n"
    "       ixsubmit matrix test-config --config-files FILE... --runner-config FILE --config-keys KEY... [OPTIONS]\n"
    "\n"
    "Build the InferenceX benchmark matrix from master-config files, as the reference\n"
    "generator (utils/matrix_logic/generate_sweep_configs.py) does, and print it as one\n"
    "JSON line. full-sweep takes every config (with filters); test-config the named\n"
    "keys (*, ? and [...] patterns allowed). --buckets prints the grouping the sweep\n"
    "consumes instead. Run 'ixsubmit matrix SUBCOMMAND --help' for the options.\n";

void Print(const std::string& json) {
  std::fwrite(json.data(), 1, json.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

}  // namespace

int RunMatrixCommand(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? std::cerr : std::cout) << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string sub = args[0];
  if (sub != "full-sweep" && sub != "test-config") {
    std::cerr << "ixsubmit matrix: error: argument command: invalid choice: '" << sub
              << "' (choose from 'full-sweep', 'test-config')\nTry 'ixsubmit matrix --help'.\n";
    return 2;
  }
  const bool full = sub == "full-sweep";
  const std::string me = "ixsubmit matrix " + sub;
  const po::options_description opts = MatrixOptions(full, true);
  SweepOptions options;
  bool buckets = false, trim = false, canary = false;
  std::vector<std::string> files;
  std::string runner_file;
  try {
    const Parsed p = ParseOptions(std::vector<std::string>(args.begin() + 1, args.end()), opts);
    if (p.Has("help")) {
      std::cout << "Usage: " << me << " --config-files FILE... --runner-config FILE"
                << (full ? "" : " --config-keys KEY...") << " [OPTIONS]\n\nOptions:\n"
                << opts;
      return 0;
    }
    options = ToSweepOptions(p, full);
    files = p.Values("config-files");
    runner_file = *p.One("runner-config");
    buckets = p.Has("buckets");
    trim = p.Has("trim-conc");
    canary = p.Has("canary");
  } catch (const Misuse& m) {
    std::cerr << me << ": error: " << m.message << "\nTry '" << me << " --help'.\n";
    return 2;
  }

  Result<MasterConfig> config = LoadMasterConfigFiles(files);
  if (!config) {
    std::cerr << me << ": " << config.error().message << "\n";
    return 1;
  }
  Result<RunnerConfig> runners = LoadRunnerConfigFile(runner_file);
  if (!runners) {
    std::cerr << me << ": " << runners.error().message << "\n";
    return 1;
  }
  if (!buckets) {
    Result<std::vector<MatrixEntry>> m = GenerateMatrix(config.value(), runners.value(), options);
    if (!m) {
      std::cerr << me << ": " << m.error().message << "\n";
      return 1;
    }
    Print(MatrixToJson(m.value()));
    return 0;
  }
  Result<MatrixBuckets> b = GenerateBuckets(config.value(), runners.value(), options, trim);
  if (!b) {
    std::cerr << me << ": " << b.error().message << "\n";
    return 1;
  }
  Print(canary ? CanaryToJson(ChooseCanary(std::move(b).value())) : BucketsToJson(b.value()));
  return 0;
}
}  // namespace ix
