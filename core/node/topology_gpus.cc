// The GPUs as NVML and a job step see them: PCI bus ids in canonical form,
// hwloc's GPU order checked against NVML's, and the node GPUs of a step
// from SLURM_STEP_GPUS or CUDA_VISIBLE_DEVICES.
#include <charconv>
#include <cstdio>
#include <set>

#include "core/base/text.h"
#include "core/node/topology.h"

namespace ix {

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
        const std::optional<int> v = ParseId(p);
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

}  // namespace ix
