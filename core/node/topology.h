// Topology: what one node has that placement cares about: NUMA nodes with
// their memory and CPUs, cores, and the NVIDIA GPUs in PCI bus order with
// the NUMA node each is attached to. Discovered through hwloc, live or from
// an hwloc XML file (tests, `ixctl topology --xml`). The OS facts that change
// while a node runs (free memory, this process's CPU affinity, /dev/shm,
// RLIMIT_MEMLOCK) and NVML sit behind small interfaces (HostProbe,
// NvmlSource) so the logic is testable without them. docs/PLACEMENT.md.
//
// Invariants of a Topology built here: numa_nodes are sorted by os_index and
// unique; cores are sorted by their first CPU and every CPU (PU os index,
// the number Linux and sched_setaffinity use) belongs to exactly one core;
// gpus are sorted by PCI bus id and gpus[i].index == i, which is the order
// NVML and CUDA_DEVICE_ORDER=PCI_BUS_ID use; a GPU's `numa`, when set, is a
// node that has CPUs and is the only one in `local_numa`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace ix {

// ---- id lists ---------------------------------------------------------------

// Parses the kernel's list syntax ("0-3,8,10-11", as in Cpus_allowed_list,
// cpuset.cpus or SLURM_STEP_GPUS). Returns the ids sorted, duplicates
// removed; "" (or only whitespace) is the empty list. A malformed list is an
// Error naming `what` and the offending part.
Result<std::vector<int>> ParseIdList(std::string_view text, const std::string& what);
// One id of such a list: decimal digits only, at most 9 of them (so it
// fits an int); nullopt for anything else.
std::optional<int> ParseId(std::string_view text);
// The reverse of ParseIdList: sorted unique ids as "0-3,8,10-11"; "" for none.
std::string FormatIdList(std::vector<int> ids);

// Bytes for messages: whole GiB as "756 GiB", else two decimals ("610.25
// GiB", truncated, never rounded up); below 1 GiB the same in MiB, below 1
// MiB in bytes.
std::string FormatBytes(uint64_t bytes);

// ---- the topology -----------------------------------------------------------

// A NUMA node. Only nodes with CPUs are placement targets; CPU-less memory
// (CXL expanders, HBM) is listed but never chosen.
struct NumaNode {
  int os_index = 0;
  uint64_t total_bytes = 0;
  std::optional<uint64_t> free_bytes;  // see MeasureFreeMemory; unset = not measured
  std::vector<int> cpus;               // PU os indices, sorted
  int cores = 0;
  bool HasCpus() const { return !cpus.empty(); }
  bool operator==(const NumaNode&) const = default;
};

// A core and the CPUs (hardware threads) it has.
struct Core {
  int os_index = -1;   // as the OS numbers it: may repeat across packages
  int package = -1;    // os index of its package; -1 unknown
  int numa = -1;       // os index of its NUMA node; -1 unknown
  std::vector<int> cpus;  // PU os indices, sorted, non-empty
  bool operator==(const Core&) const = default;
};

// An NVIDIA GPU (PCI vendor 0x10de, class 0x0302 3D controller or 0x0300 VGA).
struct Gpu {
  int index = 0;            // position in PCI bus order
  std::string bus_id;       // "0000:1b:00.0", lower-case hex
  uint16_t vendor_id = 0, device_id = 0, class_id = 0;
  std::vector<int> local_numa;  // nodes with CPUs local to the GPU's PCI path
  std::optional<int> numa;      // the single local node; unset when unknown or several
  bool operator==(const Gpu&) const = default;
};

// One node's topology; its invariants are at the top of this file.
struct Topology {
  std::string source;                // "this machine" or the XML file path
  std::vector<NumaNode> numa_nodes;  // by os_index
  std::vector<Core> cores;           // by first CPU
  std::vector<Gpu> gpus;             // by PCI bus id
  std::vector<std::string> notes;    // things worth telling (e.g. a node whose free memory is unknown)

  const NumaNode* FindNuma(int os_index) const;
  NumaNode* FindNuma(int os_index);
  std::vector<int> AllCpus() const;          // sorted
  std::vector<int> NumaNodesWithCpus() const;  // os indices, sorted
  // The GPU indices for messages: "0-7", or "none".
  std::string DescribeGpus() const;
};

// hwloc discovery of this machine, I/O devices included. Disallowed CPUs and
// nodes are kept (the step's own limits come from HostProbe::AllowedCpus).
Result<Topology> DiscoverTopology();
// DiscoverTopology once per boot: the first call writes the result to
// `cache_dir`/topology-<boot id>.json (topology_json.h, atomically), later
// ones read that file in microseconds instead of 12+ ms of discovery; their
// `source` says "this machine (cached in PATH)". A cache file that is not a
// regular file owned by this process's user, is writable by group or others,
// or does not load is ignored and rewritten. Free memory is never cached
// (MeasureFreeMemory). An empty `cache_dir` is plain DiscoverTopology.
Result<Topology> DiscoverTopologyCached(const std::string& cache_dir);

// Only the CPUs and NUMA nodes of this machine (no cores, GPUs or memory),
// from sysfs: `system_dir`/node/node<N>/cpulist, or one node 0 holding
// `system_dir`/cpu/online on a kernel without NUMA. Enough to check a binding
// (PreparedBinding) at a fraction of hwloc's discovery time.
Result<Topology> DiscoverCpusAndNodes(const std::string& system_dir = "/sys/devices/system");
// The same from an hwloc 2.x XML file (lstopo --of xml). An unreadable or
// malformed file is an Error naming the file.
Result<Topology> LoadTopologyXml(const std::string& path);
// The same from the XML text itself; `where` is the topology's `source` and
// names the text in errors (LoadTopologyXml passes the path).
Result<Topology> TopologyFromXmlText(const std::string& text, const std::string& where);
// LoadTopologyXml through a cache in `cache_dir`, keyed on the XML file's
// identity (device, inode, size, mtime and ctime in ns, in the cache file's
// name), so an edited or replaced file is parsed again. The result is
// exactly LoadTopologyXml's, `source` and errors included; errors are never
// cached. Cache files are trusted as DiscoverTopologyCached's are. A cache
// miss parses the XML in a child process (30 s at most), so a file that
// crashes the system's hwloc is an Error, not a crash of the caller
// (slurmstepd). An empty `cache_dir` is plain LoadTopologyXml.
Result<Topology> LoadTopologyXmlCached(const std::string& path, const std::string& cache_dir);

// Sets what is free on one node (tests, XML topologies, operator overrides).
// An unknown node is an Error naming the nodes present.
Status SetNumaFreeBytes(Topology& topology, int node, uint64_t bytes);

// ---- the OS behind an interface ---------------------------------------------

// RLIMIT_MEMLOCK of this process (the soft limit, the one that applies).
struct MemlockLimit {
  bool unlimited = false;
  uint64_t bytes = 0;  // meaningful when !unlimited
};
std::string DescribeMemlock(const MemlockLimit& limit);  // "unlimited" or "8 MiB"

// The live facts placement needs, from the OS. Implementations must not
// throw; failures are Errors with the path or call that failed.
class HostProbe {
 public:
  virtual ~HostProbe() = default;
  // CPUs this process may run on (sched_getaffinity), sorted.
  virtual Result<std::vector<int>> AllowedCpus() const = 0;
  // Bytes available on NUMA node `node`: MemFree + Inactive(file) from
  // /sys/devices/system/node/nodeN/meminfo (see ParseNodeMeminfo).
  virtual Result<uint64_t> NumaAvailableBytes(int node) const = 0;
  // Free bytes in /dev/shm for an unprivileged writer (statvfs f_bavail).
  virtual Result<uint64_t> ShmFreeBytes() const = 0;
  virtual Result<MemlockLimit> Memlock() const = 0;
};
// The real one. The directories are parameters so tests can point them at
// files they wrote.
std::unique_ptr<HostProbe> MakeSystemHostProbe(std::string node_dir = "/sys/devices/system/node",
                                               std::string shm_dir = "/dev/shm");

// Parses a per-node meminfo ("Node 0 MemFree:  4099616 kB" lines) into
// MemFree + Inactive(file) bytes. `where` names the file in errors.
Result<uint64_t> ParseNodeMeminfo(std::string_view text, const std::string& where);

// Sets free_bytes of every node from the probe; a node that cannot be
// measured keeps free_bytes unset and gets a note in topology.notes.
void MeasureFreeMemory(Topology& topology, const HostProbe& probe);

// What this process may use right now. A fact that could not be read is
// unset, and `notes` says why.
struct HostState {
  std::vector<int> allowed_cpus;
  std::optional<uint64_t> shm_free_bytes;
  std::optional<MemlockLimit> memlock;
  std::vector<std::string> notes;
};
HostState ReadHostState(const HostProbe& probe);

// ---- NVML confirmation --------------------------------------------------------

// What NVML reported: whether it could be used at all and, if so, the PCI
// bus ids of its devices in NVML index order, normalised like Gpu::bus_id.
struct NvmlGpus {
  enum class State { kAbsent, kFailed, kOk };
  State state = State::kAbsent;
  std::string detail;                 // kAbsent: why; kFailed: the NVML error
  std::vector<std::string> bus_ids;   // kOk: in NVML index order
};
// NVML behind an interface (tests feed fake bus ids).
class NvmlSource {
 public:
  virtual ~NvmlSource() = default;
  virtual NvmlGpus List() const = 0;
};
// dlopen("libnvidia-ml.so.1") when it is there: nvmlInit_v2,
// nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2,
// nvmlDeviceGetPciInfo_v3, nvmlShutdown. Never a link-time dependency.
std::unique_ptr<NvmlSource> MakeSystemNvml();

// "00000000:1B:00.0" (NVML), "0000:1b:00.0" or "1b:00.0" -> "0000:1b:00.0".
Result<std::string> NormalizeBusId(std::string_view text);
// The canonical form NormalizeBusId returns, from the four numbers.
std::string FormatBusId(unsigned domain, unsigned bus, unsigned device, unsigned function);

// hwloc's GPU order against NVML's.
struct GpuOrderCheck {
  enum class State { kConfirmed, kNvmlAbsent, kNvmlFailed, kMismatch };
  State state = State::kNvmlAbsent;
  std::string message;
  // A mismatch is the only outcome that says the topology is wrong.
  bool ok() const { return state != State::kMismatch; }
};
const char* GpuOrderStateName(GpuOrderCheck::State state);
GpuOrderCheck CheckGpuOrder(const Topology& topology, const NvmlGpus& nvml);

// ---- the step's GPUs ------------------------------------------------------------

// The node-level GPU indices of a step, in step order: step-local GPU i
// (CUDA device i inside the step) is node GPU gpus[i].
struct StepGpus {
  std::vector<int> gpus;
  std::string source;  // "SLURM_STEP_GPUS=0,1,2,3", "CUDA_VISIBLE_DEVICES=...", "all GPUs"
};
// From SLURM_STEP_GPUS when set (Slurm's node-level indices; inside a step
// CUDA_VISIBLE_DEVICES is renumbered from 0 when devices are constrained),
// else CUDA_VISIBLE_DEVICES (indices; GPU-/MIG- UUIDs are refused: they need
// NVML to map to bus ids), else every GPU of the topology. Pass the
// variables' values (unset = nullopt). An index the topology does not have is
// an Error naming it and the GPUs present; so is an index given twice.
Result<StepGpus> SelectStepGpus(const Topology& topology,
                                const std::optional<std::string>& slurm_step_gpus,
                                const std::optional<std::string>& cuda_visible_devices);

// ---- rendering --------------------------------------------------------------------

// `{"source":..., "numa_nodes":[...], "cores":[...], "gpus":[...], "notes":[...],
// "host":{...}}`; "host" only when `host` is given.
std::string TopologyToJson(const Topology& topology, const HostState* host, bool pretty);
// A readable multi-line summary for people.
std::string TopologySummary(const Topology& topology, const HostState* host);

}  // namespace ix
