// The topology as data and its text forms: id lists ("0-3,8"), byte
// counts for messages, the Topology lookups and SetNumaFreeBytes. Discovery
// lives in topology_hwloc.cc (hwloc) and topology_host.cc (sysfs, the OS
// probes); GPU order and the step's GPUs in topology_gpus.cc; JSON and the
// summary in topology_render.cc.
#include "core/node/topology.h"

#include <algorithm>
#include <cstdio>

#include "core/base/text.h"

namespace ix {

// ---- id lists ---------------------------------------------------------------

// Far more CPUs than Linux supports (NR_CPUS is at most 8192).
constexpr size_t kMaxIds = 1 << 16;

std::optional<int> ParseId(std::string_view text) {
  uint64_t v = 0;
  if (text.size() > 9 || !ParseUnsigned(text, v)) return std::nullopt;
  return static_cast<int>(v);
}

Result<std::vector<int>> ParseIdList(std::string_view text, const std::string& what) {
  std::vector<int> ids;
  const std::string_view all = Trim(text);
  if (all.empty()) return ids;
  for (std::string_view part : Split(all, ',')) {
    const std::string_view p = Trim(part);
    const size_t dash = p.find('-');
    auto bad = [&]() {
      return Error{what + ": '" + std::string(p) + "' in '" + std::string(all) +
                   "' is not an id or a range such as 0-3 (expected a list like 0-3,8,10-11)"};
    };
    if (dash == std::string_view::npos) {
      const std::optional<int> v = ParseId(p);
      if (!v) return bad();
      ids.push_back(*v);
    } else {
      const std::optional<int> lo = ParseId(p.substr(0, dash));
      const std::optional<int> hi = ParseId(p.substr(dash + 1));
      if (!lo || !hi || *lo > *hi) return bad();
      if (*hi - *lo > 1 << 20) return Error{what + ": range '" + std::string(p) + "' is too large"};
      for (int i = *lo; i <= *hi; ++i) ids.push_back(i);
    }
    // Each range is bounded, but not how many there are: the text may come
    // from a job's environment (SLURM_STEP_GPUS).
    if (ids.size() > kMaxIds) {
      return Error{what + ": more than " + std::to_string(kMaxIds) + " ids in '" +
                   std::string(all.substr(0, 64)) + (all.size() > 64 ? "...'" : "'")};
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string FormatIdList(std::vector<int> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

std::string FormatBytes(uint64_t bytes) {
  static const struct {
    uint64_t size;
    const char* name;
  } kUnits[] = {{1ull << 30, "GiB"}, {1ull << 20, "MiB"}};
  for (const auto& u : kUnits) {
    if (bytes < u.size) continue;
    if (bytes % u.size == 0) return std::to_string(bytes / u.size) + " " + u.name;
    const uint64_t hundredths = bytes / u.size * 100 + bytes % u.size * 100 / u.size;  // truncated
    char buf[64];
    std::snprintf(buf, sizeof buf, "%llu.%02llu %s", static_cast<unsigned long long>(hundredths / 100),
                  static_cast<unsigned long long>(hundredths % 100), u.name);
    return buf;
  }
  return std::to_string(bytes) + " bytes";
}

// ---- the topology -----------------------------------------------------------

const NumaNode* Topology::FindNuma(int os_index) const {
  for (const NumaNode& n : numa_nodes) {
    if (n.os_index == os_index) return &n;
  }
  return nullptr;
}

NumaNode* Topology::FindNuma(int os_index) {
  for (NumaNode& n : numa_nodes) {
    if (n.os_index == os_index) return &n;
  }
  return nullptr;
}

std::vector<int> Topology::AllCpus() const {
  std::vector<int> out;
  for (const Core& c : cores) out.insert(out.end(), c.cpus.begin(), c.cpus.end());
  // A topology without cores (DiscoverCpusAndNodes) has its CPUs in its nodes.
  if (cores.empty()) {
    for (const NumaNode& n : numa_nodes) out.insert(out.end(), n.cpus.begin(), n.cpus.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> Topology::NumaNodesWithCpus() const {
  std::vector<int> out;
  for (const NumaNode& n : numa_nodes) {
    if (n.HasCpus()) out.push_back(n.os_index);
  }
  return out;
}

std::string Topology::DescribeGpus() const {
  if (gpus.empty()) return "none";
  std::vector<int> ids;
  for (const Gpu& g : gpus) ids.push_back(g.index);
  return FormatIdList(ids);
}

// DiscoverTopology, LoadTopologyXml: topology_hwloc.cc (only they need
// libhwloc, so programs that use the rest of this file do not load it).
// DiscoverTopologyCached and LoadTopologyXmlCached: topology_cache.cc.

Status SetNumaFreeBytes(Topology& topology, int node, uint64_t bytes) {
  NumaNode* n = topology.FindNuma(node);
  if (!n) {
    std::vector<int> have;
    for (const NumaNode& x : topology.numa_nodes) have.push_back(x.os_index);
    return Error{"NUMA node " + std::to_string(node) + " is not in the topology (" + topology.source +
                 "); nodes present: " + FormatIdList(have)};
  }
  n->free_bytes = bytes;
  return Ok{};
}

}  // namespace ix
