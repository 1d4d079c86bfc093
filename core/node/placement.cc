#include "core/node/placement.h"
#include "core/base/json_text.h"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace ix {
namespace {

std::string Plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string FactorText(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", f);
  return buf;
}

std::string RankList(const std::vector<int64_t>& ranks) {
  std::vector<int> ids(ranks.begin(), ranks.end());
  return FormatIdList(ids);
}

// Bytes needed after the safety factor (rounded up to a whole byte).
uint64_t Scale(uint64_t raw, double factor) {
  if (factor == 1.0) return raw;
  const long double v = std::ceil(static_cast<long double>(raw) * static_cast<long double>(factor));
  return v >= 1.8e19L ? UINT64_MAX : static_cast<uint64_t>(v);
}

std::vector<int> Intersect(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

std::vector<int> Sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// The bytes a node offers: its free memory when measured, else its total.
uint64_t Available(const Topology& topology, int node) {
  const NumaNode* n = topology.FindNuma(node);
  return n->free_bytes ? *n->free_bytes : n->total_bytes;
}

// How many of each host-memory need landed on one node, and their bytes.
struct NodeTally {
  std::map<size_t, int64_t> counts;  // index into plan.host_memory -> count
  uint64_t raw_bytes = 0;
};

// The plan's host memory as it is placed, node by node, before the safety
// factor. Every node with CPUs has a tally from the start (possibly empty).
class MemoryTally {
 public:
  MemoryTally(const LaunchPlan& plan, const Topology& topology, double factor, const std::vector<int>& nodes)
      : plan_(plan), topology_(topology), factor_(factor) {
    for (int n : nodes) nodes_[n];
  }
  // One of need `need` on `node`, also counted in the rank's `rank_raw`.
  void Add(int node, size_t need, uint64_t& rank_raw) {
    NodeTally& t = nodes_[node];
    t.counts[need] += 1;
    t.raw_bytes += plan_.host_memory[need].bytes_each;
    rank_raw += plan_.host_memory[need].bytes_each;
  }
  // What `node` has left after what is placed on it so far.
  uint64_t Left(int node) {
    const uint64_t a = Available(topology_, node), used = Scale(nodes_[node].raw_bytes, factor_);
    return a > used ? a - used : 0;
  }
  const NodeTally& On(int node) { return nodes_[node]; }

 private:
  const LaunchPlan& plan_;
  const Topology& topology_;
  double factor_;
  std::map<int, NodeTally> nodes_;
};

// The step's GPUs: each in the topology, none twice, at least as many as
// the plan uses (a note when there are more).
Status CheckStepGpus(const LaunchPlan& plan, const Topology& topology, const std::vector<int>& step,
                     std::vector<std::string>& notes) {
  std::set<int> seen;
  for (int g : step) {
    if (g < 0 || g >= static_cast<int>(topology.gpus.size())) {
      return Error{"GPU " + std::to_string(g) + " of the step is not in the topology of " + topology.source +
                   "; GPUs present: " + topology.DescribeGpus()};
    }
    if (!seen.insert(g).second) return Error{"GPU " + std::to_string(g) + " is given twice in the step's GPUs"};
  }
  if (static_cast<int64_t>(step.size()) < plan.gpus) {
    return Error{plan.arm + " uses " + Plural(plan.gpus, "GPU", "GPUs") + " but the step has " +
                 std::to_string(step.size()) + (step.empty() ? "" : " (node GPUs " + FormatIdList(step) + ")")};
  }
  if (static_cast<int64_t>(step.size()) > plan.gpus) {
    notes.push_back("the step has " + std::to_string(step.size()) + " GPUs; " + plan.arm + " uses the first " +
                    std::to_string(plan.gpus));
  }
  return Ok{};
}

// The CPUs the step may use that the topology has (`asked` empty: all).
Result<std::vector<int>> AllowedCpus(const Topology& topology, const std::vector<int>& asked_cpus,
                                     std::vector<std::string>& notes) {
  const std::vector<int> all_cpus = topology.AllCpus();
  std::vector<int> allowed;
  if (asked_cpus.empty()) {
    allowed = all_cpus;
  } else {
    const std::vector<int> asked = Sorted(asked_cpus);
    allowed = Intersect(asked, all_cpus);
    std::vector<int> missing;
    std::set_difference(asked.begin(), asked.end(), all_cpus.begin(), all_cpus.end(), std::back_inserter(missing));
    if (!missing.empty()) {
      notes.push_back("allowed CPUs " + FormatIdList(missing) + " are not in the topology and are ignored");
    }
  }
  if (allowed.empty()) {
    return Error{"placement: none of the step's allowed CPUs (" + FormatIdList(asked_cpus) +
                 ") is in the topology of " + topology.source + " (CPUs " + FormatIdList(all_cpus) + ")"};
  }
  return allowed;
}

// The node-level GPUs of plan rank `pr` (its step-local indices mapped).
Result<std::vector<int>> RankGpus(const LaunchPlan& plan, const PlannedRank& pr, const std::vector<int>& step) {
  std::vector<int> gpus;
  for (int64_t local : pr.gpus) {
    if (local < 0 || local >= static_cast<int64_t>(step.size())) {
      return Error{plan.arm + " rank " + std::to_string(pr.rank) + " uses step GPU " + std::to_string(local) +
                   "; the step has " + std::to_string(step.size())};
    }
    gpus.push_back(step[static_cast<size_t>(local)]);
  }
  return gpus;
}

// The NUMA node of the rank's first GPU with a known one (nullopt: none
// has), with a note when that is not its first GPU or its GPUs span nodes.
std::optional<int> LocalNuma(const RankPlacement& rp, const Topology& topology, std::vector<std::string>& notes) {
  const Gpu* known = nullptr;
  std::vector<int> gpu_nodes;
  for (int g : rp.gpus) {
    const Gpu& gpu = topology.gpus[static_cast<size_t>(g)];
    if (gpu.numa) {
      if (!known) known = &gpu;
      gpu_nodes.push_back(*gpu.numa);
    }
  }
  if (!known) return std::nullopt;
  gpu_nodes = Sorted(gpu_nodes);
  const int numa = *known->numa;
  const std::string who = "rank " + std::to_string(rp.rank);
  const std::string placed = "; placed on node " + std::to_string(numa) + ", the node of GPU " +
                             std::to_string(known->index);
  if (!rp.gpus.empty() && known->index != rp.gpus.front()) {
    notes.push_back(who + ": GPU " + std::to_string(rp.gpus.front()) + " has no known NUMA node" + placed);
  }
  if (gpu_nodes.size() > 1) {
    notes.push_back(who + "'s GPUs " + FormatIdList(rp.gpus) + " span NUMA nodes " + FormatIdList(gpu_nodes) + placed);
  }
  return numa;
}

// No locality: among the first GPU's candidate nodes (or all), the one with
// the most memory left after what is already placed; said in a note.
int RoomiestNuma(const RankPlacement& rp, const Topology& topology, const std::vector<int>& targets,
                 MemoryTally& tally, std::vector<std::string>& notes) {
  std::vector<int> candidates = targets;
  std::string why = "no NUMA locality";
  if (!rp.gpus.empty()) {
    const Gpu& first = topology.gpus[static_cast<size_t>(rp.gpus.front())];
    if (!first.local_numa.empty()) {
      candidates = first.local_numa;
      why = "no single NUMA node (local to nodes " + FormatIdList(first.local_numa) + ")";
    }
  }
  int best = candidates.front();
  for (int n : candidates) {
    if (tally.Left(n) > tally.Left(best)) best = n;
  }
  const std::string gpu_text = rp.gpus.empty() ? std::string("it has no GPU")
                                               : "GPU " + std::to_string(rp.gpus.front()) + " (" +
                                                     topology.gpus[static_cast<size_t>(rp.gpus.front())].bus_id +
                                                     ") has " + why;
  notes.push_back("rank " + std::to_string(rp.rank) + ": " + gpu_text + "; placed on node " + std::to_string(best) +
                  ", the one with the most memory available");
  return best;
}

// Rank `ri`'s host memory tallied where it lands: per-DP-rank and per-step
// needs (the latter with rank 0) on its node, per-GPU needs on each GPU's
// node. Returns the rank's share before the safety factor.
uint64_t TallyRankMemory(const LaunchPlan& plan, size_t ri, const RankPlacement& rp, const Topology& topology,
                         MemoryTally& tally) {
  uint64_t rank_raw = 0;
  for (size_t ni = 0; ni < plan.host_memory.size(); ++ni) {
    switch (plan.host_memory[ni].per) {
      case HostMemoryNeed::Per::kDpRank:
        tally.Add(rp.numa, ni, rank_raw);
        break;
      case HostMemoryNeed::Per::kGpu:
        for (int g : rp.gpus) {
          const Gpu& gpu = topology.gpus[static_cast<size_t>(g)];
          tally.Add(gpu.numa ? *gpu.numa : rp.numa, ni, rank_raw);
        }
        break;
      case HostMemoryNeed::Per::kStep:
        if (ri == 0) tally.Add(rp.numa, ni, rank_raw);
        break;
    }
  }
  return rank_raw;
}

// Plan rank `ri`: its GPUs, its NUMA node, its memory (CPUs come later,
// once every rank's node is known).
Result<RankPlacement> PlaceRank(const LaunchPlan& plan, size_t ri, const Topology& topology,
                                const std::vector<int>& step, const std::vector<int>& targets, MemoryTally& tally,
                                double factor, std::vector<std::string>& notes) {
  RankPlacement rp;
  rp.rank = plan.ranks[ri].rank;
  Result<std::vector<int>> gpus = RankGpus(plan, plan.ranks[ri], step);
  if (!gpus) return gpus.error();
  rp.gpus = std::move(gpus).value();
  const std::optional<int> local = LocalNuma(rp, topology, notes);
  rp.numa = local ? *local : RoomiestNuma(rp, topology, targets, tally, notes);
  rp.host_bytes = Scale(TallyRankMemory(plan, ri, rp, topology, tally), factor);
  return rp;
}

// The allowed CPUs of each core of `node` (cores without any left out).
std::vector<std::vector<int>> AllowedCoresOn(const Topology& topology, int node, const std::vector<int>& allowed) {
  std::vector<std::vector<int>> cores;
  for (const Core& c : topology.cores) {
    if (c.numa != node) continue;
    std::vector<int> a = Intersect(c.cpus, allowed);
    if (!a.empty()) cores.push_back(std::move(a));
  }
  return cores;
}

// CPUs: each node's allowed cores split evenly among the ranks on it
// (`ranks` indexes into `placed`), disjoint when there are enough cores,
// shared round-robin (with a note) when not, and all allowed CPUs (with a
// note) when the node has none.
void ShareCoresOf(int node, const std::vector<size_t>& ranks, std::vector<RankPlacement>& placed,
                  const Topology& topology, const std::vector<int>& allowed, std::vector<std::string>& notes) {
  const std::vector<std::vector<int>> cores = AllowedCoresOn(topology, node, allowed);
  const size_t k = ranks.size(), n = cores.size();
  if (n == 0) {
    std::vector<int64_t> ids;
    for (size_t i : ranks) ids.push_back(placed[i].rank);
    for (size_t i : ranks) placed[i].cpus = allowed;
    notes.push_back("NUMA node " + std::to_string(node) + " has none of the step's allowed CPUs (" +
                    FormatIdList(allowed) + "); " + (k == 1 ? "rank " : "ranks ") + RankList(ids) +
                    " run on all of them, not local to their GPUs");
    return;
  }
  if (n < k) {
    notes.push_back("NUMA node " + std::to_string(node) + " has " +
                    Plural(static_cast<int64_t>(n), "allowed core", "allowed cores") + " for " + std::to_string(k) +
                    " ranks; ranks share cores");
  }
  for (size_t j = 0; j < k; ++j) {
    std::vector<int> cpus;
    if (n >= k) {
      for (size_t c = j * n / k; c < (j + 1) * n / k; ++c) cpus.insert(cpus.end(), cores[c].begin(), cores[c].end());
    } else {
      cpus = cores[j % n];
    }
    placed[ranks[j]].cpus = Sorted(std::move(cpus));
  }
}

void ShareCores(std::vector<RankPlacement>& placed, const Topology& topology, const std::vector<int>& allowed,
                std::vector<std::string>& notes) {
  std::map<int, std::vector<size_t>> on_node;  // node -> indices into `placed`
  for (size_t i = 0; i < placed.size(); ++i) on_node[placed[i].numa].push_back(i);
  for (const auto& [node, idx] : on_node) ShareCoresOf(node, idx, placed, topology, allowed, notes);
}

// "4 ranks x 189 GiB + 1 GiB for the step ..., safety factor 1.2"; "" when
// nothing lands on the node.
std::string Breakdown(const LaunchPlan& plan, const NodeTally& t, double factor) {
  std::string terms;
  for (const auto& [ni, count] : t.counts) {
    const PlannedHostMemory& h = plan.host_memory[ni];
    std::string term;
    switch (h.per) {
      case HostMemoryNeed::Per::kDpRank: term = Plural(count, "rank", "ranks") + " x " + FormatBytes(h.bytes_each); break;
      case HostMemoryNeed::Per::kGpu: term = Plural(count, "GPU", "GPUs") + " x " + FormatBytes(h.bytes_each); break;
      case HostMemoryNeed::Per::kStep: term = FormatBytes(h.bytes_each) + " for the step"; break;
    }
    if (plan.host_memory.size() > 1) term += " " + h.name;
    terms += (terms.empty() ? "" : " + ") + term;
  }
  if (!terms.empty() && factor != 1.0) terms += ", safety factor " + FactorText(factor);
  return terms;
}

// What the plan needs on `node` and what the node has; a problem when it
// needs more.
NumaDemand DemandOn(int node, const LaunchPlan& plan, const Topology& topology, MemoryTally& tally, double factor,
                    Placement& out) {
  NumaDemand d;
  d.node = node;
  for (const RankPlacement& r : out.ranks) {
    if (r.numa == node) d.ranks.push_back(r.rank);
  }
  d.needed_bytes = Scale(tally.On(node).raw_bytes, factor);
  d.available_bytes = Available(topology, node);
  d.available_is_free = topology.FindNuma(node)->free_bytes.has_value();
  d.breakdown = Breakdown(plan, tally.On(node), factor);
  if (d.needed_bytes > d.available_bytes) {
    const std::string n = std::to_string(node);
    out.problems.push_back(plan.arm + " needs " + FormatBytes(d.needed_bytes) + " on NUMA node " + n + " (" +
                           d.breakdown + "); node " + n + " has " + FormatBytes(d.available_bytes) +
                           (d.available_is_free ? " available" : " in total (free memory not measured)"));
  }
  return d;
}

// /dev/shm: enough free for the step, when known.
void CheckShm(const LaunchPlan& plan, const PlacementRequest& request, Placement& out) {
  out.shm_needed_bytes = request.shm_needed_bytes;
  out.shm_free_bytes = request.shm_free_bytes;
  if (request.shm_needed_bytes == 0) return;
  if (!request.shm_free_bytes) {
    out.notes.push_back("/dev/shm free space unknown; not checked");
  } else if (*request.shm_free_bytes < request.shm_needed_bytes) {
    out.problems.push_back(plan.arm + " needs " + FormatBytes(request.shm_needed_bytes) +
                           " free in /dev/shm; /dev/shm has " + FormatBytes(*request.shm_free_bytes) + " free");
  }
}

// RLIMIT_MEMLOCK: every rank process pins its own share, so the limit must
// cover the largest, when known.
void CheckMemlock(const LaunchPlan& plan, const PlacementRequest& request, Placement& out) {
  out.memlock = request.memlock;
  if (!request.pinned_memory) return;
  const RankPlacement* largest = nullptr;
  for (const RankPlacement& r : out.ranks) {
    if (!largest || r.host_bytes > largest->host_bytes) largest = &r;
  }
  out.memlock_needed_bytes = largest ? largest->host_bytes : 0;
  if (out.memlock_needed_bytes == 0) return;
  if (!request.memlock) {
    out.notes.push_back("RLIMIT_MEMLOCK unknown; not checked");
  } else if (!request.memlock->unlimited && request.memlock->bytes < out.memlock_needed_bytes) {
    out.problems.push_back(plan.arm + " needs RLIMIT_MEMLOCK of at least " + FormatBytes(out.memlock_needed_bytes) +
                           " to pin host memory (per rank process; rank " + std::to_string(largest->rank) +
                           " pins the most); the limit is " + DescribeMemlock(*request.memlock));
  }
}

}  // namespace

const NumaDemand* Placement::FindNuma(int node) const {
  for (const NumaDemand& n : numa) {
    if (n.node == node) return &n;
  }
  return nullptr;
}

Result<Placement> PlanPlacement(const LaunchPlan& plan, const Topology& topology, const PlacementRequest& request) {
  Placement out;
  out.arm = plan.arm;
  out.safety_factor = request.safety_factor;
  out.pinned_memory = request.pinned_memory;
  const double factor = request.safety_factor;
  if (!std::isfinite(factor) || factor <= 0) {
    return Error{"placement: safety factor " + FactorText(factor) + " must be a number > 0 (1 = the recipe's needs)"};
  }
  if (Status g = CheckStepGpus(plan, topology, request.step_gpus, out.notes); !g) return g.error();
  Result<std::vector<int>> allowed = AllowedCpus(topology, request.allowed_cpus, out.notes);
  if (!allowed) return allowed.error();
  const std::vector<int> targets = topology.NumaNodesWithCpus();
  MemoryTally tally(plan, topology, factor, targets);
  for (size_t ri = 0; ri < plan.ranks.size(); ++ri) {
    Result<RankPlacement> rp = PlaceRank(plan, ri, topology, request.step_gpus, targets, tally, factor, out.notes);
    if (!rp) return rp.error();
    out.ranks.push_back(std::move(rp).value());
  }
  ShareCores(out.ranks, topology, allowed.value(), out.notes);
  for (int node : targets) out.numa.push_back(DemandOn(node, plan, topology, tally, factor, out));
  CheckShm(plan, request, out);
  CheckMemlock(plan, request, out);
  out.fits = out.problems.empty();
  return out;
}

Result<PlacementPolicy> ParsePlacementPolicy(const std::string& text) {
  if (text == "strict") return PlacementPolicy::kStrict;
  if (text == "warn") return PlacementPolicy::kWarn;
  return Error{"placement policy '" + text + "' is unknown; allowed: strict, warn"};
}

const char* PlacementPolicyName(PlacementPolicy policy) {
  return policy == PlacementPolicy::kStrict ? "strict" : "warn";
}

Status EnforcePlacement(const Placement& placement, PlacementPolicy policy) {
  if (placement.fits || policy == PlacementPolicy::kWarn) return Ok{};
  std::string msg;
  for (const std::string& p : placement.problems) msg += (msg.empty() ? "" : "\n") + p;
  return Error{msg};
}

namespace {

// A limit as JSON: bytes, "unlimited", or null when unknown / not set.
template <class Writer>
void WriteMemlockLimit(Writer& w, const std::optional<MemlockLimit>& limit) {
  if (!limit) {
    w.Null();
  } else if (limit->unlimited) {
    w.String("unlimited");
  } else {
    w.Uint64(limit->bytes);
  }
}

// "key": [each item written by `put`].
template <class Writer, class List, class Put>
void WriteArray(Writer& w, const char* key, const List& items, Put put) {
  w.Key(key);
  w.StartArray();
  for (const auto& item : items) put(item);
  w.EndArray();
}

template <class Writer>
void WritePlacement(Writer& w, const Placement& p) {
  auto str = [&](const std::string& s) { w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); };
  w.StartObject();
  w.Key("arm"); str(p.arm);
  w.Key("verdict"); w.String(p.fits ? "fits" : "refused");
  w.Key("safety_factor"); w.Double(p.safety_factor);
  WriteArray(w, "ranks", p.ranks, [&](const RankPlacement& r) {
    w.StartObject();
    w.Key("rank"); w.Int64(r.rank);
    WriteArray(w, "gpus", r.gpus, [&](int g) { w.Int(g); });
    w.Key("numa"); w.Int(r.numa);
    w.Key("cpus"); str(FormatIdList(r.cpus));
    w.Key("host_bytes"); w.Uint64(r.host_bytes);
    w.EndObject();
  });
  WriteArray(w, "numa", p.numa, [&](const NumaDemand& d) {
    w.StartObject();
    w.Key("node"); w.Int(d.node);
    WriteArray(w, "ranks", d.ranks, [&](int64_t r) { w.Int64(r); });
    w.Key("needed_bytes"); w.Uint64(d.needed_bytes);
    w.Key("available_bytes"); w.Uint64(d.available_bytes);
    w.Key("available"); w.String(d.available_is_free ? "free" : "total");
    w.Key("breakdown"); str(d.breakdown);
    w.EndObject();
  });
  w.Key("shm");
  w.StartObject();
  w.Key("needed_bytes"); w.Uint64(p.shm_needed_bytes);
  w.Key("free_bytes");
  if (p.shm_free_bytes) {
    w.Uint64(*p.shm_free_bytes);
  } else {
    w.Null();
  }
  w.EndObject();
  w.Key("memlock");
  w.StartObject();
  w.Key("pinned_memory"); w.Bool(p.pinned_memory);
  w.Key("needed_bytes"); w.Uint64(p.memlock_needed_bytes);
  w.Key("limit"); WriteMemlockLimit(w, p.memlock);
  w.Key("set"); WriteMemlockLimit(w, p.memlock_set);
  w.Key("reason"); str(p.memlock_reason);
  w.EndObject();
  WriteArray(w, "problems", p.problems, str);
  WriteArray(w, "notes", p.notes, str);
  w.EndObject();
}

}  // namespace

std::string PlacementToJson(const Placement& placement, bool pretty) {
  return JsonText(pretty, [&](auto& w) { WritePlacement(w, placement); });
}

std::string PlacementSummary(const Placement& p) {
  std::string s = p.arm + ": " + (p.fits ? "fits" : "refused") + "\n";
  for (const RankPlacement& r : p.ranks) {
    s += "rank " + std::to_string(r.rank) + ": GPUs " + FormatIdList(r.gpus) + ", NUMA node " +
         std::to_string(r.numa) + ", CPUs " + FormatIdList(r.cpus) + ", host memory " + FormatBytes(r.host_bytes) +
         "\n";
  }
  for (const NumaDemand& d : p.numa) {
    s += "NUMA node " + std::to_string(d.node) + ": needs " + FormatBytes(d.needed_bytes);
    if (!d.breakdown.empty()) s += " (" + d.breakdown + ")";
    s += ", has " + FormatBytes(d.available_bytes) + (d.available_is_free ? " available" : " in total") + "\n";
  }
  for (const std::string& x : p.problems) s += "problem: " + x + "\n";
  for (const std::string& x : p.notes) s += "note: " + x + "\n";
  return s;
}

}  // namespace ix
