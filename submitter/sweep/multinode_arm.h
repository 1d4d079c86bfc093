// MultinodeShape: the engine an InferenceX multinode search-space row asks
// for, read the way InferenceX reads an aggregated row, and whether a
// recipe arm across nodes is that engine. docs/SWEEP.md ("Multi-node
// entries") says where each rule comes from in InferenceX.
//
// An aggregated row (`disagg: false`) describes its one worker under
// `prefill:` (num-worker 1) and repeats the shape under `decode:` with
// num-worker 0, so GPUs are counted once (InferenceX's process_result.py
// counts them all as prefill GPUs and reports decode tp/ep as 0).
//
// Invariants of a shape: tp, pp, dp, ep >= 1; `arm` is its name (dp-attn:
// depE, E = ep; else tpT, tepT with ep > 1, + ppP with pp > 1).
#pragma once

#include <cstdint>
#include <string>

#include "core/base/result.h"
#include "core/matrix/matrix_config.h"
#include "core/recipe/recipe.h"

namespace ix {

// The parallelism of the one engine an aggregated multinode row runs, in
// the recipe's terms (tp x pp x dp GPUs over every node).
struct MultinodeShape {
  std::string arm;
  int64_t tp = 1, pp = 1, dp = 1, ep = 1;
  int64_t gpus = 0;  // tp x pp x dp: every node's GPUs together

  std::string Describe() const;  // "TP 1 x PP 1 x DP 16, EP 16 (16 GPUs)"
};

// The arm name of a multinode row's worker: dp-attn -> dep<ep> (the EP
// group spans every GPU of the worker, as InferenceX's dep16 rows write
// it: tp 16 or tp 4 with ep 16), else tp<tp> (tep<tp> with ep > 1), with
// pp<pp> appended when pp > 1 ("tp8pp2").
std::string MultinodeArmName(const WorkerSpec& w);

// The shape of an aggregated row's worker, or why the row cannot be run
// by one recipe arm (the message names the field: disaggregated, no
// prefill worker, several workers, decode workers beside an aggregated
// one, dcp/pcp sizes no arm has). `c` and `ss` locate nothing here; the
// caller adds where the row is.
Result<MultinodeShape> AggregatedShape(const ConfigEntry& c, const SearchSpaceEntry& ss);

// Whether `arm` (of `recipe`) runs `shape`: it exists, spans more than one
// node, and has the shape's tp, pp, dp and ep. The error says what
// differs (or which arms the recipe has).
Status CheckMultinodeArm(const MultinodeShape& shape, const Recipe& recipe);

}  // namespace ix
