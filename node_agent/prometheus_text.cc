#include "node_agent/prometheus_text.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace ix {
namespace {

// One label of a sample; `value` raw (escaped when written).
struct Label {
  std::string_view name;
  std::string value;
};
using Labels = std::vector<Label>;

// One metric family being written: its samples are collected, and the
// family (HELP, TYPE, samples) goes out only when it has at least one, so
// a family whose every reading is unset leaves no trace.
class Family {
 public:
  Family(std::string_view name, std::string_view type, std::string_view help)
      : name_(name), type_(type), help_(help) {}

  void Add(const Labels& labels, const std::string& value) {
    samples_ += name_;
    if (!labels.empty()) {
      samples_ += '{';
      for (size_t i = 0; i < labels.size(); ++i) {
        if (i > 0) samples_ += ',';
        samples_ += labels[i].name;
        samples_ += "=\"";
        samples_ += EscapeLabelValue(labels[i].value);
        samples_ += '"';
      }
      samples_ += '}';
    }
    samples_ += ' ';
    samples_ += value;
    samples_ += '\n';
  }
  void Add(const Labels& labels, const std::optional<std::string>& value) {
    if (value) Add(labels, *value);
  }
  // HELP text is fixed here: no escaping needed (none has \ or a line end).
  void AppendTo(std::string& out) const {
    if (samples_.empty()) return;
    out += "# HELP " + std::string(name_) + " " + std::string(help_) + "\n";
    out += "# TYPE " + std::string(name_) + " " + std::string(type_) + "\n";
    out += samples_;
  }

 private:
  std::string_view name_, type_, help_;
  std::string samples_;
};

std::string Int(uint64_t v) { return std::to_string(v); }
std::string Num(double v) { return FormatSampleValue(v); }

template <class T>
std::optional<std::string> IntIf(const std::optional<T>& v, uint64_t scale = 1) {
  if (!v) return std::nullopt;
  return Int(static_cast<uint64_t>(*v) * scale);
}

// Divided, not multiplied: 35 / 100.0 is 0.35, 35 * 0.01 is 0.35000000000000003.
template <class T>
std::optional<std::string> NumIf(const std::optional<T>& v, double divisor = 1) {
  if (!v) return std::nullopt;
  return Num(static_cast<double>(*v) / divisor);
}

// The length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), 0 when it is not one.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

// ---- The families, part by part --------------------------------------------

void RenderNode(const NodeSample& node, std::string& out) {
  Family total("ix_node_numa_memory_total_bytes", "gauge", "Memory of the NUMA node (MemTotal).");
  Family free("ix_node_numa_memory_free_bytes", "gauge", "Free memory of the NUMA node (MemFree).");
  Family available("ix_node_numa_memory_available_bytes", "gauge",
                   "Memory of the NUMA node that placement counts as free (MemFree + Inactive(file)).");
  for (const NumaMemory& n : node.numa) {
    const Labels l{{"numa_node", std::to_string(n.node)}};
    total.Add(l, Int(n.total_bytes));
    free.Add(l, Int(n.free_bytes));
    available.Add(l, Int(n.available_bytes));
  }
  Family size("ix_node_shm_size_bytes", "gauge", "Size of the shared-memory tmpfs.");
  Family shm_free("ix_node_shm_free_bytes", "gauge", "Space of the shared-memory tmpfs an unprivileged writer may use.");
  Family used("ix_node_shm_used_bytes", "gauge", "Used space of the shared-memory tmpfs.");
  if (node.shm) {
    const Labels l{{"path", node.shm->path}};
    size.Add(l, Int(node.shm->size_bytes));
    shm_free.Add(l, Int(node.shm->free_bytes));
    used.Add(l, Int(node.shm->used_bytes));
  }
  for (const Family* f : {&total, &free, &available, &size, &shm_free, &used}) f->AppendTo(out);
}

// A GPU family whose value comes from one field of the sample.
struct GpuFamily {
  const char* name;
  const char* type;
  const char* help;
  std::optional<std::string> (*value)(const GpuSample&);
};

// The sample's `field` as a whole number times `scale` (IntOf) or as a
// number divided by `divisor` (NumOf): the values of kGpuFamilies.
template <auto field, uint64_t scale = 1>
std::optional<std::string> IntOf(const GpuSample& g) {
  return IntIf(g.*field, scale);
}
template <auto field, int divisor = 1>
std::optional<std::string> NumOf(const GpuSample& g) {
  return NumIf(g.*field, divisor);
}

const GpuFamily kGpuFamilies[] = {
    {"ix_gpu_power_watts", "gauge", "Board power draw of the GPU.", NumOf<&GpuSample::power_watts>},
    {"ix_gpu_energy_joules_total", "counter", "Energy the GPU used since the driver loaded.",
     NumOf<&GpuSample::energy_joules>},
    {"ix_gpu_temperature_celsius", "gauge", "Temperature of the GPU die.", IntOf<&GpuSample::temperature_celsius>},
    {"ix_gpu_sm_clock_hertz", "gauge", "Current SM clock of the GPU.", IntOf<&GpuSample::sm_clock_mhz, 1000000>},
    {"ix_gpu_memory_clock_hertz", "gauge", "Current memory clock of the GPU.",
     IntOf<&GpuSample::memory_clock_mhz, 1000000>},
    {"ix_gpu_utilization_ratio", "gauge", "Fraction of the last sample period a kernel ran on the GPU.",
     NumOf<&GpuSample::gpu_utilization_percent, 100>},
    {"ix_gpu_memory_utilization_ratio", "gauge",
     "Fraction of the last sample period the GPU memory was read or written.",
     NumOf<&GpuSample::memory_utilization_percent, 100>},
    {"ix_gpu_memory_used_bytes", "gauge", "GPU memory in use.", IntOf<&GpuSample::memory_used_bytes>},
    {"ix_gpu_memory_total_bytes", "gauge", "GPU memory in all.", IntOf<&GpuSample::memory_total_bytes>},
    {"ix_gpu_xid_events_total", "counter", "Critical Xid events of the GPU seen since the agent began listening.",
     IntOf<&GpuSample::xid_events>},
};

void RenderGpus(const GpuSnapshot& snapshot, std::string& out) {
  Family up("ix_nvml_up", "gauge", "Whether the GPUs were sampled through NVML (1) or not (0).");
  up.Add({}, Int(snapshot.state == "ok" ? 1 : 0));
  up.AppendTo(out);
  Family info("ix_gpu_info", "gauge", "A GPU of the node (always 1), with its name.");
  for (const GpuSample& g : snapshot.gpus) {
    info.Add({{"gpu", std::to_string(g.index)}, {"uuid", g.uuid}, {"name", g.name}}, Int(1));
  }
  info.AppendTo(out);
  for (const GpuFamily& def : kGpuFamilies) {
    Family f(def.name, def.type, def.help);
    for (const GpuSample& g : snapshot.gpus) f.Add({{"gpu", std::to_string(g.index)}, {"uuid", g.uuid}}, def.value(g));
    f.AppendTo(out);
  }
  Family ecc("ix_gpu_ecc_errors_total", "counter", "ECC errors of the GPU since the driver loaded (volatile).");
  for (const GpuSample& g : snapshot.gpus) {
    const std::string index = std::to_string(g.index);
    ecc.Add({{"gpu", index}, {"uuid", g.uuid}, {"type", "corrected"}}, IntIf(g.ecc_corrected_errors));
    ecc.Add({{"gpu", index}, {"uuid", g.uuid}, {"type", "uncorrected"}}, IntIf(g.ecc_uncorrected_errors));
  }
  ecc.AppendTo(out);
}

Labels StepLabels(const StepMetrics& s) {
  Labels l{{"step", s.step}};
  if (!s.sweep.empty()) l.push_back({"sweep", s.sweep});
  if (s.entry >= 0) l.push_back({"entry", std::to_string(s.entry)});
  return l;
}

void RenderSteps(const std::vector<StepMetrics>& steps, std::string& out) {
  Family processes("ix_step_processes", "gauge", "Processes in the step's process tree.");
  Family rss("ix_step_resident_memory_bytes", "gauge", "Resident memory of the step's process tree.");
  Family cpu("ix_step_cpu_seconds_total", "counter", "CPU time (user and system) of the step's live process tree.");
  Family hung("ix_step_hung", "gauge",
              "Whether the step's engines have requests running and made no token for hang-after seconds.");
  Family stalled("ix_step_stalled_seconds", "gauge",
                 "Seconds the step's engines have had requests running without making a token.");
  Family running("ix_step_engine_requests_running", "gauge", "Requests running in the step's engines.");
  Family tokens("ix_step_engine_generation_tokens_total", "counter", "Tokens the step's engines generated.");
  for (const StepMetrics& s : steps) {
    const Labels l = StepLabels(s);
    processes.Add(l, Int(s.processes));
    rss.Add(l, Int(s.rss_bytes));
    cpu.Add(l, Num(s.cpu_seconds_total));
    hung.Add(l, Int(s.hung ? 1 : 0));
    stalled.Add(l, Num(s.stalled_seconds));
    running.Add(l, NumIf(s.requests_running));
    tokens.Add(l, NumIf(s.generation_tokens_total));
  }
  for (const Family* f : {&processes, &rss, &cpu, &hung, &stalled, &running, &tokens}) f->AppendTo(out);
}

void RenderAgent(const AgentMetrics& m, std::string& out) {
  const AgentCounters& c = m.counters;
  const auto one = [&out](const char* name, const char* type, const char* help, std::optional<std::string> v) {
    Family f(name, type, help);
    f.Add({}, v);
    f.AppendTo(out);
  };
  one("ix_agent_events_received_total", "counter", "Events received on the agent's socket.",
      Int(c.events_received_total));
  one("ix_agent_events_dropped_total", "counter", "Datagrams dropped as bad or truncated.", Int(c.events_dropped_total));
  one("ix_agent_events_delivered_total", "counter", "Events a collector acknowledged.", Int(c.events_delivered_total));
  one("ix_agent_delivery_retries_total", "counter", "Deliveries to a collector that are tried again.",
      Int(c.delivery_retries_total));
  one("ix_agent_spool_records", "gauge", "Spooled records not yet delivered.", Int(c.spool_records));
  one("ix_agent_spool_bytes", "gauge", "Bytes of the spool not yet delivered.", Int(c.spool_bytes));
  one("ix_agent_delivery_up", "gauge", "Whether the last delivery to the collector succeeded (1) or not (0).",
      c.delivery_up ? std::optional<std::string>(Int(*c.delivery_up ? 1 : 0)) : std::nullopt);
  one("ix_agent_last_delivery_timestamp_seconds", "gauge", "When a collector last acknowledged a delivery.",
      NumIf(c.last_delivery_unix));
  one("ix_agent_steps_watched", "gauge", "Steps the agent watches.", Int(m.steps.size()));
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size();) {
    const size_t n = Utf8Length(value, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    const char c = value[i];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.append(value.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string FormatSampleValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  if (r.ec != std::errc()) return "NaN";  // cannot happen: 64 bytes hold any double
  return std::string(buf, r.ptr);
}

std::string RenderPrometheusText(const AgentMetrics& metrics) {
  std::string out;
  RenderNode(metrics.node, out);
  RenderGpus(metrics.gpus, out);
  RenderSteps(metrics.steps, out);
  RenderAgent(metrics, out);
  return out;
}

}  // namespace ix
