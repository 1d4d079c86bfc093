// Matrix: the benchmark matrix the reference generator
// (InferenceX utils/matrix_logic/generate_sweep_configs.py) builds from the
// master config, entry for entry and in the same order: one entry per
// single-node concurrency, one per multinode fixed-seq-len search-space row
// (its concurrencies as a list), one per multinode agentic concurrency;
// then eval marking (run-eval, eval-conc, eval-only) by the reference's
// policy. docs/MATRIX.md describes every rule.
//
// Invariants: entries point into the MasterConfig they were made from (it
// must outlive them); `runner` points at the config's label or, with a
// node filter, at a node name in the RunnerConfig; single-node entries use
// `conc`, multinode entries `concs` (non-empty).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/matrix/matrix_config.h"
#include "core/matrix/matrix_runners.h"
#include "core/base/result.h"

namespace ix {

// The four entry shapes of the reference's output (single/multinode x
// fixed-seq-len/agentic), each with its own key order.
enum class EntryKind : uint8_t { kSingleFixed, kMultiFixed, kSingleAgentic, kMultiAgentic };
// run-eval absent (agentic with --no-evals), false or true.
enum class RunEval : uint8_t { kAbsent, kFalse, kTrue };

// One matrix entry: pointers to its config, row and search-space entry plus
// what generation and eval marking decided.
struct MatrixEntry {
  EntryKind kind = EntryKind::kSingleFixed;
  const ConfigEntry* config = nullptr;
  const ScenarioRow* row = nullptr;
  const SearchSpaceEntry* ss = nullptr;
  const std::string* runner = nullptr;
  int64_t conc = 0;            // single-node entries
  std::vector<int64_t> concs;  // multinode entries
  int64_t name_conc = 0;       // the concurrency an agentic exp-name carries
  int64_t total_cpu_dram_gb = 0;
  // The runner's hardware entry, for a kv-offloading: dram row (else null):
  // the sweep checks the step's host memory against it.
  const RunnerHardware* hardware = nullptr;
  RunEval run_eval = RunEval::kAbsent;
  bool eval_only = false;
  bool has_eval_conc = false;
  int64_t eval_conc = 0;
  bool eval_all_concs = false;

  bool multinode() const { return kind == EntryKind::kMultiFixed || kind == EntryKind::kMultiAgentic; }
  bool agentic() const { return kind == EntryKind::kSingleAgentic || kind == EntryKind::kMultiAgentic; }
  // Single-node: the entry's conc; multinode: the smallest.
  int64_t MinConc() const;
};

// Which evals the matrix marks and emits.
enum class EvalMode : uint8_t {
  kDefault,  // mark evals, emit everything
  kNone,     // --no-evals
  kOnly,     // --evals-only
  kAll,      // --all-evals: every eligible entry is an eval (implies eval-only output)
};

// The command line of full-sweep / test-config, already checked for misuse
// (step_size >= 2, positive limits); empty lists mean no filter.
struct SweepOptions {
  enum class Command : uint8_t { kFullSweep, kTestConfig };
  Command command = Command::kFullSweep;
  EvalMode evals = EvalMode::kDefault;
  // Improvement over the reference (off by default): single-node agentic
  // evals per (model, runner, framework, precision, tp, ep, dp-attn).
  bool eval_per_topology = false;
  std::vector<std::string> scenario_types;  // empty: all
  std::optional<std::string> runner_node_filter;
  // full-sweep
  std::vector<std::string> model_prefixes, precisions, frameworks, runner_types;
  std::vector<std::pair<int64_t, int64_t>> seq_lens;  // (isl, osl)
  int64_t step_size = 2;
  std::optional<int64_t> min_conc, max_conc, max_tp, max_ep;
  bool single_node = false;
  bool multi_node = false;
  // test-config
  std::vector<std::string> config_keys;  // literal keys or *, ?, [...] patterns
  std::vector<int64_t> conc;             // replaces every entry's concurrencies
};

// The matrix for `options`. Errors: an unknown --runner-type, a config key
// or pattern that selects nothing, a dram row whose runner has no hardware
// entry, a node filter that matches no node.
Result<std::vector<MatrixEntry>> GenerateMatrix(const MasterConfig& config, const RunnerConfig& runners,
                                                const SweepOptions& options);

// Concurrencies of one search-space entry under the full-sweep filters, as
// the reference expands them (geometric range clamped to its end; lists in
// written order; see docs/MATRIX.md for --min-conc/--max-conc).
std::vector<int64_t> ExpandConcurrency(const SearchSpaceEntry& ss, bool fixed_seq_len, int64_t step,
                                       std::optional<int64_t> min_conc, std::optional<int64_t> max_conc);

// "1k1k", "1k8k", "8k1k", else "ISL_OSL".
std::string SeqLenName(int64_t isl, int64_t osl);
// "1k1k" -> (1024, 1024); false for an unknown name.
bool ParseSeqLen(const std::string& name, std::pair<int64_t, int64_t>& out);
// fnmatch(3)-style match of *, ?, [...] and [!...].
bool GlobMatch(std::string_view pattern, std::string_view text);
// The reference's exp-name of an entry.
std::string ExpName(const MatrixEntry& e);

}  // namespace ix
