// MasterConfig: the InferenceX master-config files (one top-level key per
// model/SKU/framework, with scenarios and search-space rows), read and
// validated with the reference generator's rules. The types mirror the
// schema; optional fields carry the reference's defaults, and a written
// order is kept wherever the reference echoes a mapping as written
// (prefill/decode workers, router, kv-offload-backend).
//
// Invariants after a successful load: every value has its schema type and
// range (ints > 0 where required, num-worker >= 0, 0 < dram-utilization
// <= 1); each search-space entry has exactly one of a concurrency range
// (conc-start <= conc-end) or a non-empty conc-list; the entry's shape
// (tp vs prefill/decode) matches `multinode`; agentic configs run on
// `cluster:` runners; config keys are unique across all files and free of
// wildcard characters. Every error names file:line:col, the config key,
// the field path and the rule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/result.h"

namespace ix {

// {name, version} objects (router, kv-offload-backend), echoed as written.
struct NamedVersion {
  std::string name;
  std::optional<std::string> version;
  bool version_first = false;  // `{version: .., name: ..}` was written
};

// A prefill or decode worker group of a multinode search-space entry.
struct WorkerSpec {
  enum class Field : uint8_t { kNumWorker, kTp, kEp, kDpAttn, kAdditionalSettings, kPp, kDcpSize, kPcpSize };
  int64_t num_worker = 0, tp = 0, ep = 0;
  bool dp_attn = false;
  int64_t pp = 1, dcp_size = 1, pcp_size = 1;  // absent: 1, as InferenceX's schema says
  std::vector<std::string> additional_settings;
  std::vector<Field> order;  // fields as written; pp, dcp-size, pcp-size follow when absent
};

// One search-space entry: the single-node shape (tp, ep, ...) or the
// multinode one (prefill, decode), exactly one concurrency form, and where
// it was written (for errors found later, e.g. a runner without hardware).
struct SearchSpaceEntry {
  uint32_t line = 0;
  uint32_t column = 0;
  std::string path;  // "scenarios.agentic-coding[0].search-space[3]"
  // Single-node shape.
  int64_t tp = 0;
  int64_t ep = 1;
  bool dp_attn = false;
  int64_t pp = 1;
  int64_t dcp_size = 1;
  int64_t pcp_size = 1;
  // Multinode shape.
  WorkerSpec prefill;
  WorkerSpec decode;
  std::string spec_decoding = "none";
  bool has_conc_list = false;
  std::vector<int64_t> conc_list;
  int64_t conc_start = 0;
  int64_t conc_end = 0;
  std::optional<NamedVersion> router;
  std::optional<std::string> kv_p2p_transfer;
  std::string kv_offloading = "none";
  std::optional<NamedVersion> kv_offload_backend;
};

// The scenario kinds of a config; names as in the YAML.
enum class ScenarioType : uint8_t { kFixedSeqLen, kAgenticCoding };
const char* ScenarioTypeName(ScenarioType t);

// A scenario row: isl/osl for fixed-seq-len; dram-utilization (needed by
// dram offload) and duration for agentic-coding; its search-space entries.
struct ScenarioRow {
  int64_t isl = 0;  // fixed-seq-len
  int64_t osl = 0;
  std::optional<double> dram_utilization;  // agentic-coding
  int64_t duration = 3600;
  std::vector<SearchSpaceEntry> search_space;
};

// One scenario of a config with its rows, in written order.
struct Scenario {
  ScenarioType type = ScenarioType::kFixedSeqLen;
  std::vector<ScenarioRow> rows;
};

// One config key: the model/SKU/framework row and its scenarios, plus where
// the key was written.
struct ConfigEntry {
  std::string key;
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;
  std::string image, model, model_prefix, runner, precision, framework;
  uint32_t runner_line = 0;
  uint32_t runner_column = 0;
  bool multinode = false;
  bool disagg = false;
  std::optional<NamedVersion> router;
  std::optional<std::string> kv_p2p_transfer;
  std::vector<Scenario> scenarios;  // written order

  std::string Where() const;  // "file:line:col"
};

// All keys of all files; `index` maps a key to its entry.
struct MasterConfig {
  std::vector<ConfigEntry> entries;  // files in order, keys in written order
  std::unordered_map<std::string, size_t> index;

  const ConfigEntry* Find(const std::string& key) const;
};

// Reads one file and appends its keys to `into` (rejecting a key that an
// earlier file already defined).
Status AppendMasterConfigFile(const std::string& path, MasterConfig& into);
Status AppendMasterConfigString(std::string_view text, const std::string& name, MasterConfig& into);
// All files, in order.
Result<MasterConfig> LoadMasterConfigFiles(const std::vector<std::string>& paths);

}  // namespace ix
