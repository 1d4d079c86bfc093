// MatrixBuckets: the grouping the sweep workflow consumes (InferenceX's
// process_changelog form), made from a benchmark matrix (generated with
// --no-evals) and an eval matrix (generated with --evals-only or
// --all-evals):
//   single_node.{1k1k,8k1k,<isl>_<osl>,agentic}, multi_node.{...},
//   evals, agentic_evals, multinode_evals, multinode_agentic_evals.
// With trim_conc (the `sweep-enabled` mode) each group of otherwise-equal
// single-node entries keeps only its lowest concurrency and multinode
// entries keep only their smallest `conc`. ChooseCanary picks the canary
// job: the lowest-concurrency non-eval entry of single_node.1k1k, else of
// single_node.8k1k (first on a tie), and removes it from the buckets.
//
// Invariants: bucket names keep their order of first appearance; entries
// keep the matrix order; eval lists hold eval entries only.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/matrix/matrix.h"

namespace ix {

// A named bucket ("8k1k", "agentic", ...) and its entries in matrix order.
struct Bucket {
  std::string name;
  std::vector<MatrixEntry> entries;
};

// The bucketed form: benchmark buckets by node kind, eval lists by kind.
struct MatrixBuckets {
  std::vector<Bucket> single_node;
  std::vector<Bucket> multi_node;
  std::vector<MatrixEntry> evals;                    // single-node fixed-seq-len
  std::vector<MatrixEntry> agentic_evals;            // single-node agentic
  std::vector<MatrixEntry> multinode_evals;          // multinode fixed-seq-len
  std::vector<MatrixEntry> multinode_agentic_evals;  // multinode agentic
};

MatrixBuckets MakeBuckets(std::vector<MatrixEntry> benchmarks, std::vector<MatrixEntry> evals, bool trim_conc);

// The canary (none when no single-node 1k1k/8k1k benchmark entry exists)
// and the buckets without it.
struct CanaryChoice {
  std::optional<MatrixEntry> canary;
  MatrixBuckets remaining;  // single_node always has 1k1k and 8k1k buckets
};

CanaryChoice ChooseCanary(MatrixBuckets buckets);

// json.dumps style, like the matrix.
std::string BucketsToJson(const MatrixBuckets& b);
std::string CanaryToJson(const CanaryChoice& c);

// The bucketed form of the selected matrix: benchmarks as --no-evals
// generates them, evals as --evals-only (or --all-evals) does.
Result<MatrixBuckets> GenerateBuckets(const MasterConfig& config, const RunnerConfig& runners,
                                      const SweepOptions& options, bool trim_conc);

}  // namespace ix
