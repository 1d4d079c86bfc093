#include "submitter/sweep/sweep_selection.h"

#include <filesystem>
#include <set>

#include "core/matrix/matrix_runners.h"
#include "submitter/matrix_options.h"

namespace ix {
namespace po = boost::program_options;
namespace {

// The selection flags: full-sweep's filters, plus --config-keys/--conc.
po::options_description SweepSelectionOptions() {
  // The union of both selections; ToSweepOptions refuses full-sweep
  // filters together with --config-keys.
  po::options_description opts = MatrixOptions(true, false);
  opts.add_options()("config-keys", po::value<std::vector<std::string>>()->multitoken(), "")(
      "conc", po::value<std::vector<std::string>>()->multitoken(), "");
  return opts;
}

}  // namespace

SweepSelection ParseSweepSelection(const std::vector<std::string>& args) {
  Parsed p = ParseOptions(args, SweepSelectionOptions());
  if (!p.Has("config-files")) throw Misuse{"the following arguments are required: --config-files"};
  if (!p.Has("runner-config")) {
    // InferenceX keeps runners.yaml beside the master configs.
    p.last["runner-config"] = {(std::filesystem::path(p.Values("config-files")[0]).parent_path() / "runners.yaml").string()};
  }
  const bool full = !p.Has("config-keys");
  if (full && p.Has("conc")) throw Misuse{"argument --conc: only with --config-keys"};
  SweepSelection s;
  s.options = ToSweepOptions(p, full);
  s.config_files = p.Values("config-files");
  s.runner_file = *p.One("runner-config");
  return s;
}

Result<MatrixBuckets> SelectEntries(const SweepSelection& selection, const MasterConfig& config, bool trim_conc) {
  Result<RunnerConfig> runners = LoadRunnerConfigFile(selection.runner_file);
  if (!runners) return runners.error();
  return GenerateBuckets(config, runners.value(), selection.options, trim_conc);
}

std::vector<std::string> ConfigKeysOf(const MatrixBuckets& b) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::vector<MatrixEntry>& entries) {
    for (const MatrixEntry& e : entries) {
      if (seen.insert(e.config->key).second) out.push_back(e.config->key);
    }
  };
  for (const Bucket& x : b.single_node) add(x.entries);
  for (const Bucket& x : b.multi_node) add(x.entries);
  add(b.evals);
  add(b.agentic_evals);
  add(b.multinode_evals);
  add(b.multinode_agentic_evals);
  return out;
}

}  // namespace ix
