#include "core/node/placement.h"

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

// How many of each host-memory need landed on one node, and their bytes.
struct NodeTally {
  std::map<size_t, int64_t> counts;  // index into plan.host_memory -> count
  uint64_t raw_bytes = 0;
};

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

  // The step's GPUs.
  const std::vector<int>& step = request.step_gpus;
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
    out.notes.push_back("the step has " + std::to_string(step.size()) + " GPUs; " + plan.arm + " uses the first " +
                        std::to_string(plan.gpus));
  }

  // The CPUs it may use.
  const std::vector<int> all_cpus = topology.AllCpus();
  std::vector<int> allowed;
  if (request.allowed_cpus.empty()) {
    allowed = all_cpus;
  } else {
    const std::vector<int> asked = Sorted(request.allowed_cpus);
    allowed = Intersect(asked, all_cpus);
    std::vector<int> missing;
    std::set_difference(asked.begin(), asked.end(), all_cpus.begin(), all_cpus.end(), std::back_inserter(missing));
    if (!missing.empty()) {
      out.notes.push_back("allowed CPUs " + FormatIdList(missing) + " are not in the topology and are ignored");
    }
  }
  if (allowed.empty()) {
    return Error{"placement: none of the step's allowed CPUs (" + FormatIdList(request.allowed_cpus) +
                 ") is in the topology of " + topology.source + " (CPUs " + FormatIdList(all_cpus) + ")"};
  }

  const std::vector<int> targets = topology.NumaNodesWithCpus();
  auto available = [&](int node) {
    const NumaNode* n = topology.FindNuma(node);
    return n->free_bytes ? *n->free_bytes : n->total_bytes;
  };
  std::map<int, NodeTally> tally;
  for (int n : targets) tally[n];
  auto add = [&](int node, size_t need, uint64_t* rank_raw) {
    NodeTally& t = tally[node];
    t.counts[need] += 1;
    t.raw_bytes += plan.host_memory[need].bytes_each;
    *rank_raw += plan.host_memory[need].bytes_each;
  };

  // Each rank: its GPUs, its NUMA node, its memory.
  for (size_t ri = 0; ri < plan.ranks.size(); ++ri) {
    const PlannedRank& pr = plan.ranks[ri];
    RankPlacement rp;
    rp.rank = pr.rank;
    for (int64_t local : pr.gpus) {
      if (local < 0 || local >= static_cast<int64_t>(step.size())) {
        return Error{plan.arm + " rank " + std::to_string(pr.rank) + " uses step GPU " + std::to_string(local) +
                     "; the step has " + std::to_string(step.size())};
      }
      rp.gpus.push_back(step[static_cast<size_t>(local)]);
    }
    const std::string who = "rank " + std::to_string(pr.rank);
    const Gpu* known = nullptr;
    std::vector<int> gpu_nodes;
    for (int g : rp.gpus) {
      const Gpu& gpu = topology.gpus[static_cast<size_t>(g)];
      if (gpu.numa) {
        if (!known) known = &gpu;
        gpu_nodes.push_back(*gpu.numa);
      }
    }
    gpu_nodes = Sorted(gpu_nodes);
    if (known) {
      rp.numa = *known->numa;
      if (!rp.gpus.empty() && known->index != rp.gpus.front()) {
        out.notes.push_back(who + ": GPU " + std::to_string(rp.gpus.front()) +
                            " has no known NUMA node; placed on node " + std::to_string(rp.numa) + ", the node of GPU " +
                            std::to_string(known->index));
      }
      if (gpu_nodes.size() > 1) {
        out.notes.push_back(who + "'s GPUs " + FormatIdList(rp.gpus) + " span NUMA nodes " +
                            FormatIdList(gpu_nodes) + "; placed on node " + std::to_string(rp.numa) +
                            ", the node of GPU " + std::to_string(known->index));
      }
    } else {
      // No locality: among the GPU's candidate nodes (or all), the one with
      // the most memory left after what is already placed.
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
      auto left = [&](int n) {
        const uint64_t a = available(n), used = Scale(tally[n].raw_bytes, factor);
        return a > used ? a - used : 0;
      };
      for (int n : candidates) {
        if (left(n) > left(best)) best = n;
      }
      rp.numa = best;
      const std::string gpu_text = rp.gpus.empty() ? std::string("it has no GPU")
                                                   : "GPU " + std::to_string(rp.gpus.front()) + " (" +
                                                         topology.gpus[static_cast<size_t>(rp.gpus.front())].bus_id +
                                                         ") has " + why;
      out.notes.push_back(who + ": " + gpu_text + "; placed on node " + std::to_string(best) +
                          ", the one with the most memory available");
    }

    uint64_t rank_raw = 0;
    for (size_t ni = 0; ni < plan.host_memory.size(); ++ni) {
      switch (plan.host_memory[ni].per) {
        case HostMemoryNeed::Per::kDpRank:
          add(rp.numa, ni, &rank_raw);
          break;
        case HostMemoryNeed::Per::kGpu:
          for (int g : rp.gpus) {
            const Gpu& gpu = topology.gpus[static_cast<size_t>(g)];
            add(gpu.numa ? *gpu.numa : rp.numa, ni, &rank_raw);
          }
          break;
        case HostMemoryNeed::Per::kStep:
          if (ri == 0) add(rp.numa, ni, &rank_raw);
          break;
      }
    }
    rp.host_bytes = Scale(rank_raw, factor);
    out.ranks.push_back(std::move(rp));
  }

  // CPUs: each node's allowed cores split evenly among the ranks on it.
  std::map<int, std::vector<size_t>> on_node;  // node -> indices into out.ranks
  for (size_t i = 0; i < out.ranks.size(); ++i) on_node[out.ranks[i].numa].push_back(i);
  for (const auto& [node, idx] : on_node) {
    std::vector<std::vector<int>> cores;  // allowed CPUs of each core of the node
    for (const Core& c : topology.cores) {
      if (c.numa != node) continue;
      std::vector<int> a = Intersect(c.cpus, allowed);
      if (!a.empty()) cores.push_back(std::move(a));
    }
    std::vector<int64_t> ranks;
    for (size_t i : idx) ranks.push_back(out.ranks[i].rank);
    const size_t k = idx.size(), n = cores.size();
    if (n == 0) {
      for (size_t i : idx) out.ranks[i].cpus = allowed;
      out.notes.push_back("NUMA node " + std::to_string(node) + " has none of the step's allowed CPUs (" +
                          FormatIdList(allowed) + "); " + (k == 1 ? "rank " : "ranks ") + RankList(ranks) +
                          " run on all of them, not local to their GPUs");
      continue;
    }
    if (n < k) {
      out.notes.push_back("NUMA node " + std::to_string(node) + " has " + Plural(static_cast<int64_t>(n), "allowed core", "allowed cores") +
                          " for " + std::to_string(k) + " ranks; ranks share cores");
    }
    for (size_t j = 0; j < k; ++j) {
      std::vector<int> cpus;
      if (n >= k) {
        for (size_t c = j * n / k; c < (j + 1) * n / k; ++c) cpus.insert(cpus.end(), cores[c].begin(), cores[c].end());
      } else {
        cpus = cores[j % n];
      }
      out.ranks[idx[j]].cpus = Sorted(std::move(cpus));
    }
  }

  // Memory per node.
  for (int node : targets) {
    const NodeTally& t = tally[node];
    NumaDemand d;
    d.node = node;
    for (const RankPlacement& r : out.ranks) {
      if (r.numa == node) d.ranks.push_back(r.rank);
    }
    d.needed_bytes = Scale(t.raw_bytes, factor);
    d.available_bytes = available(node);
    d.available_is_free = topology.FindNuma(node)->free_bytes.has_value();
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
    d.breakdown = terms;
    if (d.needed_bytes > d.available_bytes) {
      const std::string n = std::to_string(node);
      out.problems.push_back(plan.arm + " needs " + FormatBytes(d.needed_bytes) + " on NUMA node " + n + " (" +
                             d.breakdown + "); node " + n + " has " + FormatBytes(d.available_bytes) +
                             (d.available_is_free ? " available" : " in total (free memory not measured)"));
    }
    out.numa.push_back(std::move(d));
  }

  // /dev/shm.
  out.shm_needed_bytes = request.shm_needed_bytes;
  out.shm_free_bytes = request.shm_free_bytes;
  if (request.shm_needed_bytes > 0) {
    if (!request.shm_free_bytes) {
      out.notes.push_back("/dev/shm free space unknown; not checked");
    } else if (*request.shm_free_bytes < request.shm_needed_bytes) {
      out.problems.push_back(plan.arm + " needs " + FormatBytes(request.shm_needed_bytes) +
                             " free in /dev/shm; /dev/shm has " + FormatBytes(*request.shm_free_bytes) + " free");
    }
  }

  // RLIMIT_MEMLOCK: every rank process pins its own share.
  out.memlock = request.memlock;
  if (request.pinned_memory) {
    const RankPlacement* largest = nullptr;
    for (const RankPlacement& r : out.ranks) {
      if (!largest || r.host_bytes > largest->host_bytes) largest = &r;
    }
    out.memlock_needed_bytes = largest ? largest->host_bytes : 0;
    if (out.memlock_needed_bytes > 0) {
      if (!request.memlock) {
        out.notes.push_back("RLIMIT_MEMLOCK unknown; not checked");
      } else if (!request.memlock->unlimited && request.memlock->bytes < out.memlock_needed_bytes) {
        out.problems.push_back(plan.arm + " needs RLIMIT_MEMLOCK of at least " + FormatBytes(out.memlock_needed_bytes) +
                               " to pin host memory (per rank process; rank " + std::to_string(largest->rank) +
                               " pins the most); the limit is " + DescribeMemlock(*request.memlock));
      }
    }
  }

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

template <class Writer>
void WritePlacement(Writer& w, const Placement& p) {
  auto str = [&](const std::string& s) { w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); };
  w.StartObject();
  w.Key("arm"); str(p.arm);
  w.Key("verdict"); w.String(p.fits ? "fits" : "refused");
  w.Key("safety_factor"); w.Double(p.safety_factor);
  w.Key("ranks");
  w.StartArray();
  for (const RankPlacement& r : p.ranks) {
    w.StartObject();
    w.Key("rank"); w.Int64(r.rank);
    w.Key("gpus");
    w.StartArray();
    for (int g : r.gpus) w.Int(g);
    w.EndArray();
    w.Key("numa"); w.Int(r.numa);
    w.Key("cpus"); str(FormatIdList(r.cpus));
    w.Key("host_bytes"); w.Uint64(r.host_bytes);
    w.EndObject();
  }
  w.EndArray();
  w.Key("numa");
  w.StartArray();
  for (const NumaDemand& d : p.numa) {
    w.StartObject();
    w.Key("node"); w.Int(d.node);
    w.Key("ranks");
    w.StartArray();
    for (int64_t r : d.ranks) w.Int64(r);
    w.EndArray();
    w.Key("needed_bytes"); w.Uint64(d.needed_bytes);
    w.Key("available_bytes"); w.Uint64(d.available_bytes);
    w.Key("available"); w.String(d.available_is_free ? "free" : "total");
    w.Key("breakdown"); str(d.breakdown);
    w.EndObject();
  }
  w.EndArray();
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
  w.Key("problems");
  w.StartArray();
  for (const std::string& s : p.problems) str(s);
  w.EndArray();
  w.Key("notes");
  w.StartArray();
  for (const std::string& s : p.notes) str(s);
  w.EndArray();
  w.EndObject();
}

}  // namespace

std::string PlacementToJson(const Placement& placement, bool pretty) {
  rapidjson::StringBuffer buf;
  if (pretty) {
    rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buf);
    w.SetIndent(' ', 2);
    WritePlacement(w, placement);
  } else {
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    WritePlacement(w, placement);
  }
  return std::string(buf.GetString(), buf.GetSize());
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
