// A Topology for people (TopologySummary) and for scripts (TopologyToJson,
// `ixctl topology --json`), with the host facts when given.
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>

#include "core/node/topology.h"
#include "core/node/topology_writer.h"
#include "core/base/json_text.h"

namespace ix {
namespace {

template <class Writer>
void WriteTopology(Writer& w, const Topology& t, const HostState* host) {
  TopologyWriter<Writer> out(w, TopologyJsonStyle::kReport);
  w.StartObject();
  out.Members(t);
  if (host) {
    w.Key("host");
    w.StartObject();
    w.Key("allowed_cpus"); out.Cpus(host->allowed_cpus);
    w.Key("shm_free_bytes"); out.IntOrNull(host->shm_free_bytes);
    w.Key("memlock");
    if (!host->memlock) {
      w.Null();
    } else if (host->memlock->unlimited) {
      w.String("unlimited");
    } else {
      w.Uint64(host->memlock->bytes);
    }
    w.Key("notes"); out.Strings(host->notes);
    w.EndObject();
  }
  w.EndObject();
}

}  // namespace

std::string TopologyToJson(const Topology& topology, const HostState* host, bool pretty) {
  return JsonText(pretty, [&](auto& w) { WriteTopology(w, topology, host); });
}

std::string TopologySummary(const Topology& t, const HostState* host) {
  std::string s = "topology of " + t.source + ": " + std::to_string(t.NumaNodesWithCpus().size()) +
                  " NUMA node(s) with CPUs, " + std::to_string(t.cores.size()) + " cores, " +
                  std::to_string(t.AllCpus().size()) + " CPUs, " + std::to_string(t.gpus.size()) + " NVIDIA GPU(s)\n";
  for (const NumaNode& n : t.numa_nodes) {
    s += "NUMA " + std::to_string(n.os_index) + ": " + FormatBytes(n.total_bytes) + " total, " +
         (n.free_bytes ? FormatBytes(*n.free_bytes) + " available" : std::string("available not measured"));
    if (n.HasCpus()) {
      s += "; CPUs " + FormatIdList(n.cpus) + " (" + std::to_string(n.cores) + " cores)\n";
    } else {
      s += "; no CPUs (not a placement target)\n";
    }
  }
  for (const Gpu& g : t.gpus) {
    char pci_id[16];
    std::snprintf(pci_id, sizeof pci_id, "%04x:%04x", g.vendor_id, g.device_id);
    s += "GPU " + std::to_string(g.index) + ": " + g.bus_id + " [" + pci_id + "] ";
    if (g.numa) {
      s += "NUMA " + std::to_string(*g.numa) + "\n";
    } else if (!g.local_numa.empty()) {
      s += "NUMA unknown (local to nodes " + FormatIdList(g.local_numa) + ")\n";
    } else {
      s += "NUMA unknown\n";
    }
  }
  if (host) {
    s += "this process: allowed CPUs " + FormatIdList(host->allowed_cpus) + "; /dev/shm " +
         (host->shm_free_bytes ? FormatBytes(*host->shm_free_bytes) + " free" : std::string("unknown")) +
         "; RLIMIT_MEMLOCK " + (host->memlock ? DescribeMemlock(*host->memlock) : std::string("unknown")) + "\n";
    for (const std::string& n : host->notes) s += "note: " + n + "\n";
  }
  for (const std::string& n : t.notes) s += "note: " + n + "\n";
  return s;
}

}  // namespace ix
