#include "node_agent/node_sample.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/base/file_text.h"
#include "core/base/json_text.h"
#include "core/base/text.h"
#include "core/node/topology.h"
#include "node_agent/nvml_sampler.h"

namespace ix {
namespace {

// The value of the meminfo line whose name is `field` ("MemTotal:"), in
// bytes ("kB" values are KiB, as the kernel means it).
Result<uint64_t> MeminfoBytes(std::string_view text, std::string_view field, const std::string& where) {
  for (std::string_view line : Lines(text)) {
    const size_t at = line.find(field);
    if (at == line.npos || (at > 0 && line[at - 1] != ' ')) continue;  // not "...XMemTotal:"
    std::string_view value = Trim(line.substr(at + field.size()));
    uint64_t scale = 1;
    if (value.size() > 2 && value.substr(value.size() - 2) == "kB") {
      value = Trim(value.substr(0, value.size() - 2));
      scale = 1024;
    }
    uint64_t n = 0;
    if (!ParseUnsigned(value, n) || n > std::numeric_limits<uint64_t>::max() / scale) {
      return Error{where + ": '" + std::string(Trim(line)) + "': expected a number of kB"};
    }
    return n * scale;
  }
  return Error{where + ": no " + std::string(field.substr(0, field.size() - 1)) + " line"};
}

std::optional<ShmSpace> MeasureShm(const std::string& path, std::vector<std::string>& notes) {
  struct statvfs st;
  if (::statvfs(path.c_str(), &st) != 0) {
    notes.push_back("shm unknown: statvfs " + path + ": " + std::strerror(errno));
    return std::nullopt;
  }
  const uint64_t block = st.f_frsize;
  ShmSpace s;
  s.path = path;
  s.size_bytes = st.f_blocks * block;
  s.free_bytes = st.f_bavail * block;
  s.used_bytes = (st.f_blocks - st.f_bfree) * block;
  return s;
}

// What NVML is, for people: its version and the GPUs, or why none.
std::string DescribeNvml(const GpuSnapshot& gpus) {
  if (gpus.state == "absent") return gpus.detail;
  if (gpus.state != "ok") return "NVML loaded but not usable: " + gpus.detail;
  std::string text = gpus.version + ": " + std::to_string(gpus.gpus.size()) + " GPU" + (gpus.gpus.size() == 1 ? "" : "s");
  if (!gpus.detail.empty()) text += "; " + gpus.detail;
  return text;
}

template <class Writer, class T>
void OptionalNumber(Writer& w, const char* key, const std::optional<T>& v) {
  w.Key(key);
  if (!v) {
    w.Null();
  } else if constexpr (std::is_floating_point_v<T>) {
    w.Double(*v);
  } else {
    w.Uint64(*v);
  }
}

template <class Writer>
void WriteString(Writer& w, const std::string& s) {
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
}

template <class Writer>
void WriteGpu(Writer& w, const GpuSample& g) {
  w.StartObject();
  w.Key("index"); w.Uint(g.index);
  w.Key("uuid"); WriteString(w, g.uuid);
  w.Key("name"); WriteString(w, g.name);
  OptionalNumber(w, "power_watts", g.power_watts);
  OptionalNumber(w, "energy_joules", g.energy_joules);
  OptionalNumber(w, "temperature_celsius", g.temperature_celsius);
  OptionalNumber(w, "sm_clock_mhz", g.sm_clock_mhz);
  OptionalNumber(w, "memory_clock_mhz", g.memory_clock_mhz);
  OptionalNumber(w, "gpu_utilization_percent", g.gpu_utilization_percent);
  OptionalNumber(w, "memory_utilization_percent", g.memory_utilization_percent);
  OptionalNumber(w, "memory_used_bytes", g.memory_used_bytes);
  OptionalNumber(w, "memory_total_bytes", g.memory_total_bytes);
  OptionalNumber(w, "ecc_uncorrected_errors", g.ecc_uncorrected_errors);
  OptionalNumber(w, "ecc_corrected_errors", g.ecc_corrected_errors);
  OptionalNumber(w, "xid_events", g.xid_events);
  w.EndObject();
}

template <class Writer>
void WriteSample(Writer& w, const NodeSample& s) {
  w.StartObject();
  w.Key("numa");
  w.StartArray();
  for (const NumaMemory& n : s.numa) {
    w.StartObject();
    w.Key("node"); w.Int(n.node);
    w.Key("mem_total_bytes"); w.Uint64(n.total_bytes);
    w.Key("mem_free_bytes"); w.Uint64(n.free_bytes);
    w.Key("mem_available_bytes"); w.Uint64(n.available_bytes);
    w.EndObject();
  }
  w.EndArray();
  w.Key("shm");
  if (s.shm) {
    w.StartObject();
    w.Key("path"); w.String(s.shm->path.c_str(), static_cast<rapidjson::SizeType>(s.shm->path.size()));
    w.Key("size_bytes"); w.Uint64(s.shm->size_bytes);
    w.Key("free_bytes"); w.Uint64(s.shm->free_bytes);
    w.Key("used_bytes"); w.Uint64(s.shm->used_bytes);
    w.EndObject();
  } else {
    w.Null();
  }
  w.Key("gpus");
  w.StartArray();
  for (const GpuSample& g : s.gpus) WriteGpu(w, g);
  w.EndArray();
  w.Key("nvml"); WriteString(w, s.nvml);
  w.Key("notes");
  w.StartArray();
  for (const std::string& n : s.notes) w.String(n.c_str(), static_cast<rapidjson::SizeType>(n.size()));
  w.EndArray();
  w.EndObject();
}

}  // namespace

Result<NumaMemory> ParseNumaMemory(std::string_view text, const std::string& where) {
  Result<uint64_t> total = MeminfoBytes(text, "MemTotal:", where);
  if (!total) return total.error();
  Result<uint64_t> free = MeminfoBytes(text, "MemFree:", where);
  if (!free) return free.error();
  Result<uint64_t> available = ParseNodeMeminfo(text, where);
  if (!available) return available.error();
  NumaMemory m;
  m.total_bytes = total.value();
  m.free_bytes = free.value();
  m.available_bytes = available.value();
  return m;
}

NodeSample TakeNodeSample(const NodeSampleSources& sources) {
  NodeSample s;
  // The node numbers as the placement code finds them (nodeN directories).
  Result<Topology> nodes = DiscoverCpusAndNodes(sources.system_dir);
  if (!nodes) s.notes.push_back("NUMA nodes unknown: " + nodes.error().message);
  const std::vector<NumaNode> none;
  for (const NumaNode& n : nodes ? nodes.value().numa_nodes : none) {
    const std::string path = sources.system_dir + "/node/node" + std::to_string(n.os_index) + "/meminfo";
    int err = 0;
    const std::string text = ReadFileText(path, &err);
    Result<NumaMemory> m = err ? Result<NumaMemory>(Error{path + ": cannot read: " + std::strerror(err)})
                               : ParseNumaMemory(text, path);
    if (!m) {
      s.notes.push_back("memory of NUMA node " + std::to_string(n.os_index) + " unknown: " + m.error().message);
      continue;
    }
    m.value().node = n.os_index;
    s.numa.push_back(m.value());
  }
  s.shm = MeasureShm(sources.shm_path, s.notes);
  if (sources.gpus) {
    GpuSnapshot gpus = sources.gpus->Sample();
    s.nvml = DescribeNvml(gpus);
    s.gpus = std::move(gpus.gpus);
  } else {
    s.nvml = "NVML not looked at";
  }
  return s;
}

std::string NodeSampleToJson(const NodeSample& sample, bool pretty) {
  return JsonText(pretty, [&](auto& w) { WriteSample(w, sample); });
}

}  // namespace ix
