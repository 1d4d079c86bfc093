#include "core/matrix/matrix_buckets.h"

#include <algorithm>
#include <unordered_map>

#include "core/matrix/matrix_json.h"

namespace ix {
namespace {

std::string BucketName(const MatrixEntry& e) {
  return e.agentic() ? "agentic" : SeqLenName(e.row->isl, e.row->osl);
}

std::vector<MatrixEntry>& BucketFor(std::vector<Bucket>& buckets, const std::string& name) {
  for (Bucket& b : buckets) {
    if (b.name == name) return b.entries;
  }
  buckets.push_back(Bucket{name, {}});
  return buckets.back().entries;
}

// Single-node: one entry per group of entries equal apart from conc (and
// the exp-name that carries it), the lowest conc, first on a tie, at the
// group's first position. Multinode: conc cut to its minimum.
void Trim(std::vector<MatrixEntry>& entries) {
  std::vector<MatrixEntry> out;
  std::unordered_map<std::string, size_t> slot;
  std::string ident;
  for (MatrixEntry& e : entries) {
    if (e.multinode()) {
      const int64_t low = e.MinConc();
      e.concs.assign(1, low);
      if (e.kind == EntryKind::kMultiAgentic) e.name_conc = low;
      out.push_back(std::move(e));
      continue;
    }
    ident.clear();
    AppendMatrixEntry(ident, e, /*without_conc=*/true);
    auto [it, fresh] = slot.emplace(ident, out.size());
    if (fresh) {
      out.push_back(std::move(e));
    } else if (e.conc < out[it->second].conc) {
      out[it->second] = std::move(e);
    }
  }
  entries = std::move(out);
}

void AppendBuckets(std::string& out, const std::vector<Bucket>& buckets) {
  out += '{';
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (i) out += ", ";
    AppendJsonString(out, buckets[i].name);
    out += ": ";
    AppendMatrixList(out, buckets[i].entries);
  }
  out += '}';
}

void AppendAll(std::string& out, const MatrixBuckets& b) {
  out += "{\"single_node\": ";
  AppendBuckets(out, b.single_node);
  out += ", \"multi_node\": ";
  AppendBuckets(out, b.multi_node);
  using List = std::vector<MatrixEntry> MatrixBuckets::*;
  static const std::pair<const char*, List> kEvalLists[] = {
      {"evals", &MatrixBuckets::evals},
      {"agentic_evals", &MatrixBuckets::agentic_evals},
      {"multinode_evals", &MatrixBuckets::multinode_evals},
      {"multinode_agentic_evals", &MatrixBuckets::multinode_agentic_evals},
  };
  for (const auto& [key, list] : kEvalLists) {
    out += ", \"";
    out += key;
    out += "\": ";
    AppendMatrixList(out, b.*list);
  }
  out += '}';
}

}  // namespace

MatrixBuckets MakeBuckets(std::vector<MatrixEntry> benchmarks, std::vector<MatrixEntry> evals, bool trim_conc) {
  MatrixBuckets b;
  for (MatrixEntry& e : benchmarks) {
    const std::string name = BucketName(e);
    BucketFor(e.multinode() ? b.multi_node : b.single_node, name).push_back(std::move(e));
  }
  if (trim_conc) {
    for (Bucket& x : b.single_node) Trim(x.entries);
    for (Bucket& x : b.multi_node) Trim(x.entries);
  }
  for (MatrixEntry& e : evals) {
    switch (e.kind) {
      case EntryKind::kSingleFixed: b.evals.push_back(std::move(e)); break;
      case EntryKind::kSingleAgentic: b.agentic_evals.push_back(std::move(e)); break;
      case EntryKind::kMultiFixed: b.multinode_evals.push_back(std::move(e)); break;
      case EntryKind::kMultiAgentic: b.multinode_agentic_evals.push_back(std::move(e)); break;
    }
  }
  return b;
}

CanaryChoice ChooseCanary(MatrixBuckets buckets) {
  CanaryChoice c;
  for (const char* name : {"1k1k", "8k1k"}) {
    std::vector<MatrixEntry>& list = BucketFor(buckets.single_node, name);
    if (c.canary) continue;
    size_t best = list.size();
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i].run_eval == RunEval::kTrue) continue;
      if (best == list.size() || list[i].conc < list[best].conc) best = i;
    }
    if (best == list.size()) continue;
    c.canary = std::move(list[best]);
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(best));
  }
  c.remaining = std::move(buckets);
  return c;
}

std::string BucketsToJson(const MatrixBuckets& b) {
  std::string out;
  AppendAll(out, b);
  return out;
}

std::string CanaryToJson(const CanaryChoice& c) {
  std::string out = "{\"canary\": [";
  if (c.canary) AppendMatrixEntry(out, *c.canary);
  out += "], \"remaining\": ";
  AppendAll(out, c.remaining);
  out += '}';
  return out;
}

Result<MatrixBuckets> GenerateBuckets(const MasterConfig& config, const RunnerConfig& runners,
                                      const SweepOptions& options, bool trim_conc) {
  std::vector<MatrixEntry> bench, evals;
  if (options.evals != EvalMode::kOnly) {
    SweepOptions b = options;
    b.evals = EvalMode::kNone;
    Result<std::vector<MatrixEntry>> m = GenerateMatrix(config, runners, b);
    if (!m) return m.error();
    bench = std::move(m).value();
  }
  if (options.evals != EvalMode::kNone) {
    SweepOptions e = options;
    if (e.evals == EvalMode::kDefault) e.evals = EvalMode::kOnly;
    Result<std::vector<MatrixEntry>> m = GenerateMatrix(config, runners, e);
    if (!m) return m.error();
    evals = std::move(m).value();
  }
  return MakeBuckets(std::move(bench), std::move(evals), trim_conc);
}

}  // namespace ix
