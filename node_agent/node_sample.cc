#include "node_agent/node_sample.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "core/base/file_text.h"
#include "core/base/json_text.h"
#include "core/base/text.h"
#include "core/node/topology.h"

namespace ix {
namespace {

constexpr char kNoGpuSampling[] = "; GPU sampling through NVML is not built yet";

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

std::string DescribeNvml(const NvmlSource* nvml) {
  if (!nvml) return std::string("NVML not loaded: not looked for") + kNoGpuSampling;
  const NvmlGpus gpus = nvml->List();
  switch (gpus.state) {
    case NvmlGpus::State::kAbsent:
      return gpus.detail + kNoGpuSampling;
    case NvmlGpus::State::kFailed:
      return "NVML loaded but not usable: " + gpus.detail + kNoGpuSampling;
    case NvmlGpus::State::kOk:
      break;
  }
  return "NVML loads and lists " + std::to_string(gpus.bus_ids.size()) + " GPU(s)" + kNoGpuSampling;
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
  w.EndArray();
  w.Key("nvml"); w.String(s.nvml.c_str(), static_cast<rapidjson::SizeType>(s.nvml.size()));
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
  s.nvml = DescribeNvml(sources.nvml);
  return s;
}

std::string NodeSampleToJson(const NodeSample& sample, bool pretty) {
  return JsonText(pretty, [&](auto& w) { WriteSample(w, sample); });
}

}  // namespace ix
