// SweepSelection: the matrix entries a sweep covers, as its flags name them
// (`ixsubmit matrix`'s: --config-files, with --config-keys/--conc
// test-config's selection, otherwise full-sweep's filters; --runner-config
// defaults to runners.yaml beside the first config file). Shared by
// `ixsubmit sweep` and `ixsubmit images`, so both select the same rows.
#pragma once

#include <string>
#include <vector>

#include "core/matrix/matrix.h"
#include "core/matrix/matrix_buckets.h"
#include "core/matrix/matrix_config.h"
#include "core/base/result.h"

namespace ix {

// The selection flags, parsed: the filters and the files they apply to.
struct SweepSelection {
  SweepOptions options;
  std::vector<std::string> config_files;
  std::string runner_file;
};

// Parses the flags; throws Misuse (submitter/matrix_options.h).
SweepSelection ParseSweepSelection(const std::vector<std::string>& args);
// The selection's entries, bucketed (trimmed to the lowest concurrency
// when `trim_conc`); `config` must be loaded from selection.config_files
// and outlive the result, whose entries point into it.
Result<MatrixBuckets> SelectEntries(const SweepSelection& selection, const MasterConfig& config, bool trim_conc);
// The config keys of every entry, in first-seen order.
std::vector<std::string> ConfigKeysOf(const MatrixBuckets& buckets);

}  // namespace ix
