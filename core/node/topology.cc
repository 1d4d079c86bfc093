#include "core/node/topology.h"
#include "core/base/file_text.h"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace ix {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

// A non-negative decimal int, all of `s`.
std::optional<int> ParseIndex(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::string ErrnoText(int err) { return std::strerror(err); }


}  // namespace

// ---- id lists ---------------------------------------------------------------

// Far more CPUs than Linux supports (NR_CPUS is at most 8192).
constexpr size_t kMaxIds = 1 << 16;

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
      const std::optional<int> v = ParseIndex(p);
      if (!v) return bad();
      ids.push_back(*v);
    } else {
      const std::optional<int> lo = ParseIndex(p.substr(0, dash));
      const std::optional<int> hi = ParseIndex(p.substr(dash + 1));
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

// ---- the OS behind an interface ---------------------------------------------

std::string DescribeMemlock(const MemlockLimit& limit) {
  return limit.unlimited ? "unlimited" : FormatBytes(limit.bytes);
}

Result<uint64_t> ParseNodeMeminfo(std::string_view text, const std::string& where) {
  std::optional<uint64_t> mem_free, inactive_file;
  for (std::string_view line : Split(text, '\n')) {
    std::istringstream in{std::string(line)};
    std::vector<std::string> f;
    for (std::string w; in >> w;) f.push_back(w);
    if (f.size() >= 2 && f[0] == "Node") f.erase(f.begin(), f.begin() + 2);  // "Node N"
    if (f.size() < 2) continue;
    std::optional<uint64_t>* slot = f[0] == "MemFree:"          ? &mem_free
                                    : f[0] == "Inactive(file):" ? &inactive_file
                                                                : nullptr;
    if (!slot) continue;
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(f[1].data(), f[1].data() + f[1].size(), v);
    if (ec != std::errc() || p != f[1].data() + f[1].size()) {
      return Error{where + ": '" + std::string(Trim(line)) + "': expected a number of kB"};
    }
    const uint64_t scale = f.size() >= 3 && f[2] == "kB" ? 1024 : 1;
    *slot = v * scale;
  }
  if (!mem_free) return Error{where + ": no MemFree line"};
  if (!inactive_file) return Error{where + ": no Inactive(file) line"};
  return *mem_free + *inactive_file;
}

namespace {

class SystemHostProbe : public HostProbe {
 public:
  SystemHostProbe(std::string node_dir, std::string shm_dir)
      : node_dir_(std::move(node_dir)), shm_dir_(std::move(shm_dir)) {}

  Result<std::vector<int>> AllowedCpus() const override {
    for (int ncpus = 1024; ncpus <= (1 << 16); ncpus *= 2) {
      cpu_set_t* set = CPU_ALLOC(static_cast<size_t>(ncpus));
      if (!set) return Error{"sched_getaffinity: out of memory"};
      const size_t size = CPU_ALLOC_SIZE(static_cast<size_t>(ncpus));
      CPU_ZERO_S(size, set);
      if (sched_getaffinity(0, size, set) != 0) {
        const int err = errno;
        CPU_FREE(set);
        if (err == EINVAL) continue;  // more CPUs than the mask holds
        return Error{"sched_getaffinity: " + ErrnoText(err)};
      }
      std::vector<int> cpus;
      for (int i = 0; i < ncpus; ++i) {
        if (CPU_ISSET_S(static_cast<size_t>(i), size, set)) cpus.push_back(i);
      }
      CPU_FREE(set);
      return cpus;
    }
    return Error{"sched_getaffinity: the affinity mask is larger than 65536 CPUs"};
  }

  Result<uint64_t> NumaAvailableBytes(int node) const override {
    const std::string path = node_dir_ + "/node" + std::to_string(node) + "/meminfo";
    int err = 0;
    const std::string text = ReadFileText(path, &err);
    if (err) return Error{path + ": cannot read: " + ErrnoText(err)};
    return ParseNodeMeminfo(text, path);
  }

  Result<uint64_t> ShmFreeBytes() const override {
    struct statvfs st;
    if (statvfs(shm_dir_.c_str(), &st) != 0) return Error{"statvfs " + shm_dir_ + ": " + ErrnoText(errno)};
    return static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
  }

  Result<MemlockLimit> Memlock() const override {
    struct rlimit rl;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) return Error{"getrlimit(RLIMIT_MEMLOCK): " + ErrnoText(errno)};
    MemlockLimit m;
    m.unlimited = rl.rlim_cur == RLIM_INFINITY;
    m.bytes = m.unlimited ? 0 : static_cast<uint64_t>(rl.rlim_cur);
    return m;
  }

 private:
  std::string node_dir_, shm_dir_;
};

}  // namespace

Result<Topology> DiscoverCpusAndNodes(const std::string& system_dir) {
  Topology t;
  t.source = "this machine";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(system_dir + "/node", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("node", 0) != 0 || name.size() == 4 ||
        name.find_first_not_of("0123456789", 4) != std::string::npos) {
      continue;
    }
    int err = 0;
    const std::string path = entry.path().string() + "/cpulist";
    const std::string text = ReadFileText(path, &err);
    if (err) return Error{"cannot read " + path + ": " + std::strerror(err)};
    Result<std::vector<int>> cpus = ParseIdList(text, path);
    if (!cpus) return cpus.error();
    NumaNode n;
    n.os_index = std::atoi(name.c_str() + 4);
    n.cpus = cpus.value();
    t.numa_nodes.push_back(std::move(n));
  }
  if (t.numa_nodes.empty()) {
    int err = 0;
    const std::string path = system_dir + "/cpu/online";
    const std::string text = ReadFileText(path, &err);
    if (err) return Error{"cannot read " + path + ": " + std::strerror(err)};
    Result<std::vector<int>> cpus = ParseIdList(text, path);
    if (!cpus) return cpus.error();
    NumaNode n;
    n.cpus = cpus.value();
    t.numa_nodes.push_back(std::move(n));
  }
  std::sort(t.numa_nodes.begin(), t.numa_nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.os_index < b.os_index; });
  return t;
}

std::unique_ptr<HostProbe> MakeSystemHostProbe(std::string node_dir, std::string shm_dir) {
  return std::make_unique<SystemHostProbe>(std::move(node_dir), std::move(shm_dir));
}

void MeasureFreeMemory(Topology& topology, const HostProbe& probe) {
  for (NumaNode& n : topology.numa_nodes) {
    Result<uint64_t> avail = probe.NumaAvailableBytes(n.os_index);
    if (avail) {
      n.free_bytes = avail.value();
    } else {
      n.free_bytes.reset();
      topology.notes.push_back("free memory of NUMA node " + std::to_string(n.os_index) +
                               " unknown: " + avail.error().message);
    }
  }
}

HostState ReadHostState(const HostProbe& probe) {
  HostState h;
  Result<std::vector<int>> cpus = probe.AllowedCpus();
  if (cpus) {
    h.allowed_cpus = std::move(cpus).value();
  } else {
    h.notes.push_back("allowed CPUs unknown: " + cpus.error().message);
  }
  Result<uint64_t> shm = probe.ShmFreeBytes();
  if (shm) {
    h.shm_free_bytes = shm.value();
  } else {
    h.notes.push_back("/dev/shm free space unknown: " + shm.error().message);
  }
  Result<MemlockLimit> ml = probe.Memlock();
  if (ml) {
    h.memlock = ml.value();
  } else {
    h.notes.push_back("RLIMIT_MEMLOCK unknown: " + ml.error().message);
  }
  return h;
}

// ---- NVML confirmation --------------------------------------------------------

std::string FormatBusId(unsigned domain, unsigned bus, unsigned device, unsigned function) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, device, function);
  return buf;
}

Result<std::string> NormalizeBusId(std::string_view text) {
  const std::string_view s = Trim(text);
  auto bad = [&]() {
    return Error{"'" + std::string(s) + "' is not a PCI bus id (expected domain:bus:device.function, "
                 "such as 0000:1b:00.0)"};
  };
  std::vector<std::string_view> parts = Split(s, ':');
  if (parts.size() == 2) parts.insert(parts.begin(), std::string_view("0"));
  if (parts.size() != 3) return bad();
  const size_t dot = parts[2].find('.');
  if (dot == std::string_view::npos) return bad();
  const std::string_view fields[4] = {parts[0], parts[1], parts[2].substr(0, dot), parts[2].substr(dot + 1)};
  const unsigned limits[4] = {0xffffffffu, 0xffu, 0x1fu, 0x7u};
  unsigned v[4] = {};
  for (int i = 0; i < 4; ++i) {
    const std::string_view f = fields[i];
    if (f.empty() || f.size() > 8) return bad();
    auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v[i], 16);
    if (ec != std::errc() || p != f.data() + f.size() || v[i] > limits[i]) return bad();
  }
  return FormatBusId(v[0], v[1], v[2], v[3]);
}

const char* GpuOrderStateName(GpuOrderCheck::State state) {
  switch (state) {
    case GpuOrderCheck::State::kConfirmed: return "confirmed";
    case GpuOrderCheck::State::kNvmlAbsent: return "nvml_absent";
    case GpuOrderCheck::State::kNvmlFailed: return "nvml_failed";
    case GpuOrderCheck::State::kMismatch: return "mismatch";
  }
  return "?";
}

GpuOrderCheck CheckGpuOrder(const Topology& topology, const NvmlGpus& nvml) {
  GpuOrderCheck c;
  if (nvml.state == NvmlGpus::State::kAbsent) {
    c.state = GpuOrderCheck::State::kNvmlAbsent;
    c.message = nvml.detail + "; the GPU order (PCI bus id order from hwloc) is not confirmed";
    return c;
  }
  if (nvml.state == NvmlGpus::State::kFailed) {
    c.state = GpuOrderCheck::State::kNvmlFailed;
    c.message = "NVML failed: " + nvml.detail + "; the GPU order (PCI bus id order from hwloc) is not confirmed";
    return c;
  }
  std::string hw, nv;
  for (const Gpu& g : topology.gpus) hw += (hw.empty() ? "" : ", ") + g.bus_id;
  for (const std::string& b : nvml.bus_ids) nv += (nv.empty() ? "" : ", ") + b;
  if (hw.empty()) hw = "none";
  if (nv.empty()) nv = "none";
  if (nvml.bus_ids.size() != topology.gpus.size()) {
    c.state = GpuOrderCheck::State::kMismatch;
    c.message = "hwloc finds " + std::to_string(topology.gpus.size()) + " NVIDIA GPUs (" + hw + ") but NVML " +
                std::to_string(nvml.bus_ids.size()) + " (" + nv + ")";
    return c;
  }
  for (size_t i = 0; i < nvml.bus_ids.size(); ++i) {
    if (nvml.bus_ids[i] != topology.gpus[i].bus_id) {
      c.state = GpuOrderCheck::State::kMismatch;
      c.message = "GPU " + std::to_string(i) + " is " + topology.gpus[i].bus_id + " in PCI bus order (hwloc) but " +
                  nvml.bus_ids[i] + " in NVML order; hwloc: " + hw + "; NVML: " + nv;
      return c;
    }
  }
  c.state = GpuOrderCheck::State::kConfirmed;
  c.message = "NVML confirms the " + std::to_string(nvml.bus_ids.size()) + " GPUs in PCI bus id order";
  return c;
}

// ---- the step's GPUs ------------------------------------------------------------

namespace {

Status CheckIndices(const Topology& topology, const std::vector<int>& gpus, const std::string& source) {
  std::set<int> seen;
  for (int g : gpus) {
    if (g < 0 || g >= static_cast<int>(topology.gpus.size())) {
      return Error{"GPU " + std::to_string(g) + " (from " + source + ") is not in the topology of " +
                   topology.source + "; GPUs present: " + topology.DescribeGpus()};
    }
    if (!seen.insert(g).second) {
      return Error{source + ": GPU " + std::to_string(g) + " is given twice"};
    }
  }
  return Ok{};
}

}  // namespace

Result<StepGpus> SelectStepGpus(const Topology& topology, const std::optional<std::string>& slurm_step_gpus,
                                const std::optional<std::string>& cuda_visible_devices) {
  StepGpus out;
  if (slurm_step_gpus) {
    out.source = "SLURM_STEP_GPUS=" + *slurm_step_gpus;
    Result<std::vector<int>> ids = ParseIdList(*slurm_step_gpus, "SLURM_STEP_GPUS");
    if (!ids) return ids.error();
    out.gpus = std::move(ids).value();
  } else if (cuda_visible_devices) {
    out.source = "CUDA_VISIBLE_DEVICES=" + *cuda_visible_devices;
    const std::string_view all = Trim(*cuda_visible_devices);
    if (!all.empty()) {
      for (std::string_view part : Split(all, ',')) {
        const std::string_view p = Trim(part);
        if (p.rfind("GPU-", 0) == 0 || p.rfind("MIG-", 0) == 0) {
          return Error{"CUDA_VISIBLE_DEVICES entry '" + std::string(p) +
                       "' is a UUID; mapping GPU UUIDs to PCI bus ids needs NVML, which placement does not "
                       "use for this yet; give GPU indices (CUDA_DEVICE_ORDER=PCI_BUS_ID) instead"};
        }
        const std::optional<int> v = ParseIndex(p);
        if (!v) {
          return Error{"CUDA_VISIBLE_DEVICES entry '" + std::string(p) + "' in '" + std::string(all) +
                       "' is not a GPU index (expected a comma list such as 0,1,2,3)"};
        }
        out.gpus.push_back(*v);
      }
    }
  } else {
    out.source = "all GPUs of " + topology.source;
    for (const Gpu& g : topology.gpus) out.gpus.push_back(g.index);
  }
  if (Status s = CheckIndices(topology, out.gpus, out.source); !s) return s.error();
  return out;
}

// ---- rendering --------------------------------------------------------------------

namespace {

template <class Writer>
void WriteIds(Writer& w, const std::vector<int>& ids) {
  w.StartArray();
  for (int i : ids) w.Int(i);
  w.EndArray();
}

template <class Writer>
void WriteTopology(Writer& w, const Topology& t, const HostState* host) {
  auto str = [&](const std::string& s) { w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); };
  w.StartObject();
  w.Key("source"); str(t.source);
  w.Key("numa_nodes");
  w.StartArray();
  for (const NumaNode& n : t.numa_nodes) {
    w.StartObject();
    w.Key("os_index"); w.Int(n.os_index);
    w.Key("total_bytes"); w.Uint64(n.total_bytes);
    w.Key("free_bytes");
    if (n.free_bytes) {
      w.Uint64(*n.free_bytes);
    } else {
      w.Null();
    }
    w.Key("cpus"); str(FormatIdList(n.cpus));
    w.Key("cores"); w.Int(n.cores);
    w.Key("placement_target"); w.Bool(n.HasCpus());
    w.EndObject();
  }
  w.EndArray();
  w.Key("cores");
  w.StartArray();
  for (const Core& c : t.cores) {
    w.StartObject();
    w.Key("os_index"); w.Int(c.os_index);
    w.Key("package"); w.Int(c.package);
    w.Key("numa"); w.Int(c.numa);
    w.Key("cpus"); str(FormatIdList(c.cpus));
    w.EndObject();
  }
  w.EndArray();
  w.Key("gpus");
  w.StartArray();
  for (const Gpu& g : t.gpus) {
    char pci_id[16];
    std::snprintf(pci_id, sizeof pci_id, "%04x:%04x", g.vendor_id, g.device_id);
    char cls[8];
    std::snprintf(cls, sizeof cls, "%04x", g.class_id);
    w.StartObject();
    w.Key("index"); w.Int(g.index);
    w.Key("bus_id"); str(g.bus_id);
    w.Key("pci_id"); w.String(pci_id);
    w.Key("class"); w.String(cls);
    w.Key("numa");
    if (g.numa) {
      w.Int(*g.numa);
    } else {
      w.Null();
    }
    w.Key("local_numa"); WriteIds(w, g.local_numa);
    w.EndObject();
  }
  w.EndArray();
  w.Key("notes");
  w.StartArray();
  for (const std::string& n : t.notes) str(n);
  w.EndArray();
  if (host) {
    w.Key("host");
    w.StartObject();
    w.Key("allowed_cpus"); str(FormatIdList(host->allowed_cpus));
    w.Key("shm_free_bytes");
    if (host->shm_free_bytes) {
      w.Uint64(*host->shm_free_bytes);
    } else {
      w.Null();
    }
    w.Key("memlock");
    if (!host->memlock) {
      w.Null();
    } else if (host->memlock->unlimited) {
      w.String("unlimited");
    } else {
      w.Uint64(host->memlock->bytes);
    }
    w.Key("notes");
    w.StartArray();
    for (const std::string& n : host->notes) str(n);
    w.EndArray();
    w.EndObject();
  }
  w.EndObject();
}

}  // namespace

std::string TopologyToJson(const Topology& topology, const HostState* host, bool pretty) {
  rapidjson::StringBuffer buf;
  if (pretty) {
    rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buf);
    w.SetIndent(' ', 2);
    WriteTopology(w, topology, host);
  } else {
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    WriteTopology(w, topology, host);
  }
  return std::string(buf.GetString(), buf.GetSize());
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
