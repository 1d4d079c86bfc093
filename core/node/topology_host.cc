// The OS facts placement reads while a node runs: the CPUs and NUMA nodes
// from sysfs (DiscoverCpusAndNodes), free memory per node, this process's
// CPU affinity, /dev/shm and RLIMIT_MEMLOCK (the system HostProbe), and the
// HostState and free-memory measurements made from a probe.
#include <sched.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/base/file_text.h"
#include "core/base/text.h"
#include "core/node/topology.h"

namespace ix {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

}  // namespace

std::string DescribeMemlock(const MemlockLimit& limit) {
  return limit.unlimited ? "unlimited" : FormatBytes(limit.bytes);
}

Result<uint64_t> ParseNodeMeminfo(std::string_view text, const std::string& where) {
  std::optional<uint64_t> mem_free, inactive_file;
  for (std::string_view line : Lines(text)) {
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
    if (!ParseUnsigned(f[1], v)) {
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

// The HostProbe of this machine: sched_getaffinity, the per-node meminfo
// under node_dir, statvfs of shm_dir and getrlimit. No state but the paths.
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

namespace {

// A node of `os_index` holding the CPUs the list file at `path` names.
Result<NumaNode> ReadNodeCpus(const std::string& path, int os_index) {
  int err = 0;
  const std::string text = ReadFileText(path, &err);
  if (err) return Error{"cannot read " + path + ": " + ErrnoText(err)};
  Result<std::vector<int>> cpus = ParseIdList(text, path);
  if (!cpus) return cpus.error();
  NumaNode n;
  n.os_index = os_index;
  n.cpus = std::move(cpus).value();
  return n;
}

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
    Result<NumaNode> n = ReadNodeCpus(entry.path().string() + "/cpulist", std::atoi(name.c_str() + 4));
    if (!n) return n.error();
    t.numa_nodes.push_back(std::move(n).value());
  }
  if (t.numa_nodes.empty()) {  // a kernel without NUMA: one node 0
    Result<NumaNode> n = ReadNodeCpus(system_dir + "/cpu/online", 0);
    if (!n) return n.error();
    t.numa_nodes.push_back(std::move(n).value());
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

}  // namespace ix
