#include "core/recipe/launch_plan_kv_offload.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>

#include "core/yaml/yaml_reader.h"

namespace ix {
namespace {

// The tier's variables over `outer`: rendered on first use and kept; the
// loader rejected cycles, so the recursion ends.
class TierScope {
 public:
  TierScope(const KvOffloadTier& tier, const Lookup& outer) : tier_(tier), outer_(outer) {}

  std::optional<std::string> Get(const std::string& name) {
    if (auto it = cache_.find(name); it != cache_.end()) return it->second;
    for (const auto& [v, t] : tier_.vars) {
      if (v != name) continue;
      Result<std::string> r = t.tmpl.Render([this](const std::string& n) { return Get(n); });
      if (!r) return std::nullopt;
      return cache_[name] = r.value();
    }
    return outer_(name);
  }

  Result<std::string> Render(const LocatedTemplate& t) {
    Result<std::string> r = t.tmpl.Render([this](const std::string& n) { return Get(n); });
    if (!r) return Error{t.ref.Describe() + ": " + r.error().message};
    return r;
  }

  // kText items, and kWhen items whose variable is non-empty, into `out`.
  Status RenderArgs(const std::vector<ArgTemplate>& args, std::vector<std::string>& out) {
    for (const ArgTemplate& a : args) {
      std::vector<const LocatedTemplate*> items;
      if (a.kind == ArgTemplate::Kind::kText) {
        items.push_back(&a.text);
      } else if (a.kind == ArgTemplate::Kind::kWhen) {
        const std::optional<std::string> cond = Get(a.when);
        if (cond && !cond->empty()) {
          for (const auto& t : a.args) items.push_back(&t);
        }
      }
      for (const LocatedTemplate* t : items) {
        Result<std::string> r = Render(*t);
        if (!r) return r.error();
        out.push_back(std::move(r).value());
      }
    }
    return Ok{};
  }

  Result<EnvList> RenderEnv(const std::vector<EnvTemplate>& env) {
    EnvList out;
    for (const auto& e : env) {
      Result<std::string> v = Render(e.value);
      if (!v) return v.error();
      out.emplace_back(e.name, std::move(v).value());
    }
    return out;
  }

 private:
  const KvOffloadTier& tier_;
  const Lookup& outer_;
  std::map<std::string, std::string> cache_;
};

// A name already in `base` gets the new value in place; others are appended.
void Merge(EnvList& base, const EnvList& extra) {
  for (const auto& e : extra) {
    auto it = std::find_if(base.begin(), base.end(), [&](const auto& b) { return b.first == e.first; });
    if (it != base.end()) {
      it->second = e.second;
    } else {
      base.push_back(e);
    }
  }
}

}  // namespace

Result<uint64_t> ParseByteCount(const std::string& text) {
  static const std::pair<const char*, uint64_t> kUnits[] = {
      {"TiB", 1ull << 40}, {"GiB", 1ull << 30}, {"MiB", 1ull << 20}, {"KiB", 1ull << 10}, {"TB", 1000000000000ull},
      {"GB", 1000000000ull}, {"MB", 1000000ull}, {"KB", 1000ull},   {"B", 1ull}};
  uint64_t unit = 1;
  std::string digits = text;
  for (const auto& [suffix, factor] : kUnits) {
    const size_t n = std::strlen(suffix);
    if (text.size() > n && text.compare(text.size() - n, n, suffix) == 0) {
      unit = factor;
      digits = text.substr(0, text.size() - n);
      break;
    }
  }
  const Error bad{"'" + text + "' is not a byte count (an integer with an optional unit: B, KB, MB, GB, TB, KiB, "
                  "MiB, GiB, TiB)"};
  if (digits.empty() || digits.size() > 19 || digits.find_first_not_of("0123456789") != std::string::npos) return bad;
  const uint64_t n = std::stoull(digits);
  if (n != 0 && unit > std::numeric_limits<uint64_t>::max() / n) return bad;
  return n * unit;
}

Result<const KvOffloadTier*> SelectKvOffload(const Recipe& recipe, const std::string& name) {
  if (name.empty() || name == "none") return static_cast<const KvOffloadTier*>(nullptr);
  if (const KvOffloadTier* t = recipe.FindKvOffload(name)) return t;
  std::vector<std::string> allowed = {"none"};
  for (const KvOffloadTier& t : recipe.kv_offload) allowed.push_back(t.name);
  return Error{"recipe " + recipe.name + " serves no KV offload tier '" + name + "'; allowed: " + JoinNames(allowed)};
}

Result<std::vector<std::pair<std::string, std::string>>> KvOffloadBuiltinValues(const KvOffloadTier& tier,
                                                                              const Arm& arm,
                                                                              const RenderRequest& req) {
  const std::string what = "KV offload tier " + tier.name + " (arm " + arm.name + ")";
  // bash's $(( )) is 64-bit: the budget x 10^9 must fit, as in the script.
  constexpr int64_t kMaxGb = std::numeric_limits<int64_t>::max() / 1000000000;
  const bool dram = tier.Needs("TOTAL_CPU_DRAM_GB") || tier.Needs("KV_OFFLOAD_BYTES_PER_RANK") ||
                    tier.Needs("KV_OFFLOAD_GB_PER_RANK");
  if (dram && (req.total_cpu_dram_gb <= 0 || req.total_cpu_dram_gb > kMaxGb)) {
    return Error{what + " sizes its host DRAM from TOTAL_CPU_DRAM_GB, which must be a positive number of GB (at most " +
                 std::to_string(kMaxGb) + "), got " + std::to_string(req.total_cpu_dram_gb) +
                 " (ixsubmit plan --total-cpu-dram-gb N; a sweep takes it from the row's dram-utilization)"};
  }
  if (tier.Needs("RESULT_DIR") && req.result_dir.empty()) return Error{what + " writes files and needs the step's result directory"};
  // InferenceX: GPU_COUNT = TP x PCP_SIZE, the GPUs of the row (its TP is
  // 4 for DEP4); here the GPUs of the arm, all nodes of it.
  const int64_t gpus = arm.gpus * arm.nodes;
  std::vector<std::pair<std::string, std::string>> out;
  const int64_t total = req.total_cpu_dram_gb > 0 ? req.total_cpu_dram_gb : 0;
  out.emplace_back("TOTAL_CPU_DRAM_GB", std::to_string(total));
  out.emplace_back("GPU_COUNT", std::to_string(gpus));
  out.emplace_back("KV_OFFLOAD_BYTES_PER_RANK", std::to_string(total * 1000 * 1000 * 1000 / gpus));
  out.emplace_back("KV_OFFLOAD_GB_PER_RANK", std::to_string(total / gpus));
  // DP attention keeps eager offload so block hashes agree across ranks.
  out.emplace_back("KV_LAZY_OFFLOAD", arm.dp > 1 ? "false" : "true");
  out.emplace_back("RESULT_DIR", req.result_dir);
  return out;
}

Status ApplyKvOffload(const KvOffloadTier& tier, const Lookup& lookup, const std::string& what, LaunchPlan& plan) {
  TierScope scope(tier, lookup);
  plan.kv_offload = tier.name;
  std::vector<std::string> args;
  if (Status s = scope.RenderArgs(tier.engine_args, args); !s) return s;
  Result<EnvList> env = scope.RenderEnv(tier.engine_env);
  if (!env) return env.error();
  for (PlannedProcess& engine : plan.processes) {
    engine.argv.insert(engine.argv.end(), args.begin(), args.end());
    Merge(engine.env, env.value());
  }
  for (const KvOffloadFile& f : tier.files) {
    Result<std::string> text = scope.Render(f.text);
    if (!text) return text.error();
    plan.files.push_back(PlannedFile{f.name, std::move(text).value()});
  }
  if (!tier.servers.empty() && plan.nodes > 1) {
    return Error{what + ": KV offload tier " + tier.name + " starts servers (" + tier.servers.front().name +
                 "), which an arm across nodes does not support; use a single-node arm or another tier"};
  }
  std::vector<PlannedProcess> servers;
  for (const KvOffloadServer& s : tier.servers) {
    PlannedProcess p;
    p.name = s.name;
    p.role = PlannedProcess::kServerRole;
    p.log = s.log;
    if (Status st = scope.RenderArgs(s.argv, p.argv); !st) return st;
    Result<EnvList> senv = scope.RenderEnv(s.env);
    if (!senv) return senv.error();
    p.env = std::move(senv).value();
    for (const auto& r : s.readiness) {
      Result<std::string> url = scope.Render(r.url);
      if (!url) return url.error();
      p.readiness.push_back(ReadinessCheck{r.kind, std::move(url).value()});
    }
    servers.push_back(std::move(p));
  }
  plan.processes.insert(plan.processes.begin(), servers.begin(), servers.end());
  for (const KvOffloadMemory& m : tier.host_memory) {
    Result<std::string> text = scope.Render(m.bytes);
    if (!text) return text.error();
    Result<uint64_t> bytes = ParseByteCount(text.value());
    if (!bytes) return Error{m.bytes.ref.Describe() + ": " + bytes.error().message};
    // Counted on this node, as the recipe's needs are (AddHostMemory).
    const int64_t count = m.per == HostMemoryNeed::Per::kDpRank ? static_cast<int64_t>(plan.ranks.size())
                          : m.per == HostMemoryNeed::Per::kGpu  ? plan.gpus
                                                                : 1;
    plan.host_memory.push_back(PlannedHostMemory{m.name, m.per, bytes.value(), count,
                                                 bytes.value() * static_cast<uint64_t>(count), m.pinned});
  }
  return Ok{};
}

}  // namespace ix
