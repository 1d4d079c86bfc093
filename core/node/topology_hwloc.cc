// The hwloc half of core/node/topology.h: discovery of this machine and loading
// of an hwloc XML, turned into a Topology. Kept apart from the rest (ix_node)
// so that programs using only the sysfs and id-list parts (ix-stepd) do not
// load libhwloc and libudev at every start.
#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/base/file_text.h"
#include "core/base/text.h"
#include "core/node/topology.h"

namespace ix {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

std::vector<int> Bits(hwloc_const_bitmap_t b) {
  std::vector<int> out;
  if (!b) return out;
  for (int i = hwloc_bitmap_first(b); i != -1; i = hwloc_bitmap_next(b, i)) out.push_back(i);
  return out;
}

int OsIndex(hwloc_obj_t obj) {
  return obj && obj->os_index != HWLOC_UNKNOWN_INDEX ? static_cast<int>(obj->os_index) : -1;
}

bool IsNvidiaGpu(const hwloc_obj_t obj) {
  const auto& pci = obj->attr->pcidev;
  return pci.vendor_id == 0x10de && (pci.class_id == 0x0302 || pci.class_id == 0x0300);
}

// The first NUMA node among an object's memory children (looking through
// memory-side caches), preferring plain DRAM (no subtype) over HBM, CXL or
// GPU memory; nullptr when it has none.
hwloc_obj_t FirstNuma(hwloc_obj_t obj) {
  hwloc_obj_t fallback = nullptr;
  for (hwloc_obj_t m = obj->memory_first_child; m; m = m->next_sibling) {
    hwloc_obj_t n = m->type == HWLOC_OBJ_NUMANODE ? m : FirstNuma(m);
    if (!n) continue;
    if (!n->subtype) return n;
    if (!fallback) fallback = n;
  }
  return fallback;
}

// The NUMA node nearest to a CPU: the memory attached to its closest
// ancestor that has any.
hwloc_obj_t NearestNuma(hwloc_obj_t pu) {
  for (hwloc_obj_t obj = pu; obj; obj = obj->parent) {
    if (obj->memory_arity == 0) continue;
    if (hwloc_obj_t n = FirstNuma(obj)) return n;
  }
  return nullptr;
}

// hwloc loads an XML file whose PUs or NUMA nodes share an os_index (or
// have none) as it is; a CPU in two cores, or two nodes of one number,
// would break the invariants of topology.h that placement relies on.
Status CheckDistinctIndices(const Topology& topo) {
  const std::string expected = " (expected an hwloc topology XML with distinct os_index values)";
  for (size_t i = 0; i < topo.numa_nodes.size(); ++i) {
    const int n = topo.numa_nodes[i].os_index;
    if (n < 0) return Error{topo.source + ": a NUMA node has no os_index" + expected};
    if (i > 0 && topo.numa_nodes[i - 1].os_index == n) {
      return Error{topo.source + ": NUMA node os_index " + std::to_string(n) + " appears twice" + expected};
    }
  }
  std::vector<int> cpus;
  for (const Core& c : topo.cores) cpus.insert(cpus.end(), c.cpus.begin(), c.cpus.end());
  std::sort(cpus.begin(), cpus.end());
  if (!cpus.empty() && cpus.front() < 0) return Error{topo.source + ": a PU has no os_index" + expected};
  const auto twice = std::adjacent_find(cpus.begin(), cpus.end());
  if (twice != cpus.end()) {
    return Error{topo.source + ": PU os_index " + std::to_string(*twice) + " appears twice" + expected};
  }
  return Ok{};
}

// NUMA nodes with their memory, sorted by os_index (CPUs come with the cores).
void AddNumaNodes(hwloc_topology_t t, Topology& topo) {
  for (hwloc_obj_t n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, nullptr); n;
       n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n)) {
    NumaNode node;
    node.os_index = OsIndex(n);
    node.total_bytes = n->attr ? n->attr->numanode.local_memory : 0;
    topo.numa_nodes.push_back(std::move(node));
  }
  std::sort(topo.numa_nodes.begin(), topo.numa_nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.os_index < b.os_index; });
}

// Cores: every PU belongs to its Core ancestor, or is a core of its own
// when the topology has no core level. A core's NUMA node is its nearest
// one (see NearestNuma); a node's CPUs are those of the cores it is nearest
// to, which is what Linux lists as the node's cpulist. hwloc's own NUMA
// cpusets also cover CPUs of other nodes for CPU-less memory.
void AddCores(hwloc_topology_t t, Topology& topo) {
  std::map<hwloc_obj_t, Core> by_core;
  for (hwloc_obj_t pu = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PU, nullptr); pu;
       pu = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PU, pu)) {
    hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, pu);
    hwloc_obj_t key = core ? core : pu;
    Core& c = by_core[key];
    if (c.cpus.empty()) {
      c.os_index = OsIndex(key);
      c.package = OsIndex(hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, pu));
      c.numa = OsIndex(NearestNuma(pu));
    }
    c.cpus.push_back(OsIndex(pu));
  }
  for (auto& [obj, c] : by_core) {
    std::sort(c.cpus.begin(), c.cpus.end());
    topo.cores.push_back(c);
  }
  std::sort(topo.cores.begin(), topo.cores.end(),
            [](const Core& a, const Core& b) { return a.cpus.front() < b.cpus.front(); });
  for (NumaNode& n : topo.numa_nodes) {
    for (const Core& c : topo.cores) {
      if (c.numa != n.os_index) continue;
      n.cpus.insert(n.cpus.end(), c.cpus.begin(), c.cpus.end());
      ++n.cores;
    }
    std::sort(n.cpus.begin(), n.cpus.end());
  }
}

// The nodes with CPUs local to a GPU: those in its nearest non-I/O
// ancestor's nodeset or, without one, those whose CPUs overlap its cpuset.
std::vector<int> LocalNodes(hwloc_topology_t t, hwloc_obj_t gpu, const Topology& topo) {
  const std::vector<int> with_cpus = topo.NumaNodesWithCpus();
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, gpu);
  std::vector<int> local;
  if (anc && anc->nodeset && !hwloc_bitmap_iszero(anc->nodeset)) {
    for (int n : Bits(anc->nodeset)) {
      if (std::binary_search(with_cpus.begin(), with_cpus.end(), n)) local.push_back(n);
    }
  } else if (anc && anc->cpuset) {
    for (const NumaNode& n : topo.numa_nodes) {
      for (int cpu : n.cpus) {
        if (hwloc_bitmap_isset(anc->cpuset, static_cast<unsigned>(cpu))) {
          local.push_back(n.os_index);
          break;
        }
      }
    }
  }
  return local;
}

// The NVIDIA GPUs, in PCI bus order (their index is their place in it).
Status AddGpus(hwloc_topology_t t, Topology& topo) {
  struct Found {
    std::tuple<unsigned, unsigned, unsigned, unsigned> key;
    Gpu gpu;
  };
  std::vector<Found> found;
  for (hwloc_obj_t d = hwloc_get_next_pcidev(t, nullptr); d; d = hwloc_get_next_pcidev(t, d)) {
    if (!IsNvidiaGpu(d)) continue;
    const auto& pci = d->attr->pcidev;
    Found f;
    f.key = {pci.domain, pci.bus, pci.dev, pci.func};
    f.gpu.bus_id = FormatBusId(pci.domain, pci.bus, pci.dev, pci.func);
    f.gpu.vendor_id = pci.vendor_id;
    f.gpu.device_id = pci.device_id;
    f.gpu.class_id = pci.class_id;
    f.gpu.local_numa = LocalNodes(t, d, topo);
    if (f.gpu.local_numa.size() == 1) f.gpu.numa = f.gpu.local_numa.front();
    found.push_back(std::move(f));
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.key < b.key; });
  // hwloc loads XML with two PCI devices at one address as it is; GPU
  // indices are positions in bus order, so each address must be one GPU.
  for (size_t i = 1; i < found.size(); ++i) {
    if (found[i].key == found[i - 1].key) {
      return Error{topo.source + ": PCI device " + found[i].gpu.bus_id +
                   " appears twice (expected an hwloc topology XML with distinct PCI bus ids)"};
    }
  }
  for (size_t i = 0; i < found.size(); ++i) {
    found[i].gpu.index = static_cast<int>(i);
    topo.gpus.push_back(std::move(found[i].gpu));
  }
  return Ok{};
}

// Builds our Topology from a loaded hwloc topology.
Result<Topology> Build(hwloc_topology_t t, std::string source) {
  Topology topo;
  topo.source = std::move(source);
  AddNumaNodes(t, topo);
  AddCores(t, topo);
  if (topo.cores.empty()) return Error{topo.source + ": hwloc found no CPUs"};
  if (Status s = CheckDistinctIndices(topo); !s) return s.error();
  if (topo.NumaNodesWithCpus().empty()) return Error{topo.source + ": hwloc found no NUMA node with CPUs"};
  if (Status s = AddGpus(t, topo); !s) return s.error();
  return topo;
}

// Owns an hwloc topology for the duration of one discovery.
class HwlocTopology {
 public:
  HwlocTopology() { ok_ = hwloc_topology_init(&t_) == 0; }
  ~HwlocTopology() {
    if (ok_) hwloc_topology_destroy(t_);
  }
  HwlocTopology(const HwlocTopology&) = delete;
  HwlocTopology& operator=(const HwlocTopology&) = delete;
  bool ok() const { return ok_; }
  hwloc_topology_t get() const { return t_; }

  // Keeps disallowed CPUs/nodes (the step's own limits are applied later)
  // and the important I/O devices (GPUs are display-class PCI devices).
  int Configure() {
    if (hwloc_topology_set_flags(t_, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) != 0) return -1;
    return hwloc_topology_set_io_types_filter(t_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  }

 private:
  hwloc_topology_t t_ = nullptr;
  bool ok_ = false;
};

// Discovers this machine into `t`.
Status LoadLive(HwlocTopology& t) {
  if (!t.ok()) return Error{"hwloc: cannot initialise a topology: " + ErrnoText(errno)};
  if (t.Configure() != 0) return Error{"hwloc: cannot configure discovery: " + ErrnoText(errno)};
  if (hwloc_topology_load(t.get()) != 0) {
    return Error{"hwloc: discovery of this machine failed: " + ErrnoText(errno)};
  }
  return Ok{};
}

}  // namespace

Result<Topology> DiscoverTopology() {
  HwlocTopology t;
  if (Status s = LoadLive(t); !s) return s.error();
  return Build(t.get(), "this machine");
}

Result<Topology> LoadTopologyXml(const std::string& path) {
  int err = 0;
  const std::string text = ReadFileText(path, &err);
  if (err) return Error{path + ": cannot read topology XML: " + ErrnoText(err)};
  return TopologyFromXmlText(text, path);
}

Result<Topology> TopologyFromXmlText(const std::string& text, const std::string& path) {
  if (Trim(text).empty()) return Error{path + ": file is empty, expected an hwloc topology XML"};
  HwlocTopology t;
  if (!t.ok()) return Error{"hwloc: cannot initialise a topology: " + ErrnoText(errno)};
  if (t.Configure() != 0) return Error{"hwloc: cannot configure discovery: " + ErrnoText(errno)};
  // From memory, so the file is read exactly once and hwloc never falls
  // back to discovering this machine. A malformed file fails when set
  // (hwloc 2.12) or when loaded (2.9): one message for both.
  if (hwloc_topology_set_xmlbuffer(t.get(), text.data(), static_cast<int>(text.size() + 1)) != 0 ||
      hwloc_topology_load(t.get()) != 0) {
    return Error{path + ": not a valid hwloc topology XML (hwloc could not load it: " + ErrnoText(errno) +
                 "); expected the output of lstopo --of xml"};
  }
  return Build(t.get(), path);
}

}  // namespace ix
