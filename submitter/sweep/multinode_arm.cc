#include "submitter/sweep/multinode_arm.h"

namespace ix {
namespace {

std::string N(int64_t v) { return std::to_string(v); }

std::string Names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}

}  // namespace

std::string MultinodeShape::Describe() const {
  return "TP " + N(tp) + " x PP " + N(pp) + " x DP " + N(dp) + ", EP " + N(ep) + " (" + N(gpus) + " GPUs)";
}

std::string MultinodeArmName(const WorkerSpec& w) {
  if (w.dp_attn) return "dep" + N(w.ep);
  std::string name = (w.ep > 1 ? "tep" : "tp") + N(w.tp);
  if (w.pp > 1) name += "pp" + N(w.pp);
  return name;
}

Result<MultinodeShape> AggregatedShape(const ConfigEntry& c, const SearchSpaceEntry& ss) {
  if (c.disagg) {
    return Error{"disaggregated (disagg: true; prefill " + N(ss.prefill.num_worker) + " x TP " + N(ss.prefill.tp) +
                 ", decode " + N(ss.decode.num_worker) + " x TP " + N(ss.decode.tp) +
                 "): separate prefill and decode engines are not run yet"};
  }
  const WorkerSpec& w = ss.prefill;
  if (w.num_worker != 1) {
    return Error{"prefill.num-worker is " + N(w.num_worker) +
                 ": an aggregated entry runs one worker (a recipe arm is one engine)"};
  }
  if (ss.decode.num_worker != 0) {
    return Error{"decode.num-worker is " + N(ss.decode.num_worker) +
                 " in an aggregated entry (InferenceX writes 0 there, the worker being prefill's)"};
  }
  if (w.dcp_size > 1 || w.pcp_size > 1) {
    return Error{"prefill.dcp-size " + N(w.dcp_size) + ", pcp-size " + N(w.pcp_size) +
                 ": no recipe arm has decode or prefill context parallelism"};
  }
  MultinodeShape s;
  s.arm = MultinodeArmName(w);
  s.ep = w.ep;
  s.pp = w.pp;
  if (w.dp_attn) {
    // The EP group spans the worker's GPUs: tp == ep is DEP (TP 1 per rank),
    // tp < ep is TP x DP ("TP4 x DP4 gives EP16").
    if (w.tp < 1 || w.ep % w.tp != 0) {
      return Error{"prefill: dp-attn with tp " + N(w.tp) + " and ep " + N(w.ep) + ": ep must be a multiple of tp"};
    }
    s.tp = w.tp == w.ep ? 1 : w.tp;
    s.dp = w.tp == w.ep ? w.ep : w.ep / w.tp;
  } else {
    s.tp = w.tp;
    s.dp = 1;
  }
  s.gpus = s.tp * s.pp * s.dp;
  return s;
}

Status CheckMultinodeArm(const MultinodeShape& shape, const Recipe& recipe) {
  const Arm* arm = recipe.FindArm(shape.arm);
  if (!arm) {
    return Error{"recipe " + recipe.name + " has no arm " + shape.arm + " (" + shape.Describe() +
                 "); arms: " + Names(recipe.ArmNames())};
  }
  if (arm->nodes < 2) {
    return Error{"arm " + shape.arm + " of recipe " + recipe.name +
                 " runs on one node; a multinode entry needs an arm with nodes > 1"};
  }
  if (arm->tp != shape.tp || arm->pp != shape.pp || arm->dp != shape.dp || arm->ep != shape.ep) {
    return Error{"arm " + shape.arm + " of recipe " + recipe.name + " is TP " + N(arm->tp) + " x PP " + N(arm->pp) +
                 " x DP " + N(arm->dp) + ", EP " + N(arm->ep) + "; the entry needs " + shape.Describe()};
  }
  return Ok{};
}

}  // namespace ix
