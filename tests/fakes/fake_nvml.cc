// libnvidia-ml.so.1, fake: the NVML functions ix-node-agent's sampler
// (node_agent/nvml_sampler.cc) and core/node/topology_nvml.cc call, with
// NVML's C ABI (node_agent/nvml_abi.h), answering from a script so tests
// can make GPUs busy, idle, broken or missing features. Point
// IX_NVML_LIBRARY (or dlopen) at it, or put its directory on
// LD_LIBRARY_PATH.
//
// The script is the file named by IX_FAKE_NVML_SCRIPT, read by every
// nvmlInit_v2 that is not nested in another (so a test may change it
// between an nvmlShutdown and the next nvmlInit_v2). One directive a line,
// `#` starts a comment:
//
//   gpus N                    N GPUs, 0 to 64 (default 8)
//   idle_watts W              power at load 0 (default 80)
//   busy_watts W              power at load 1 (default 680)
//   load_file PATH            the load, a number 0..1 in that file, read at
//                             every call (a missing or unreadable file is
//                             load 0, idle); without it, load 0
//   xid GPU AFTER_SECONDS CODE  a critical Xid CODE on GPU, delivered by
//                             nvmlEventSetWait_v2 once AFTER_SECONDS have
//                             passed since nvmlInit_v2 (repeatable)
//   field_values off          nvmlDeviceGetFieldValues answers
//                             NOT_SUPPORTED (the single calls must serve)
//   unsupported ID...         these field ids answer NOT_SUPPORTED in the
//                             batch (185: a GPU without the 1 s average)
//   ecc off                   ECC disabled: the ECC fields and
//                             nvmlDeviceGetTotalEccErrors answer NOT_SUPPORTED
//   events off                nvmlDeviceRegisterEvents answers NOT_SUPPORTED
//   not_supported FUNCTION... these per-GPU NVML functions answer
//                             NOT_SUPPORTED (nvmlDeviceGetMemoryInfo_v2: an
//                             older driver's answer)
//   lost GPU...               every call about these GPUs (by handle)
//                             answers GPU_IS_LOST, as after falling off the bus
//   fail_init                 nvmlInit_v2 answers DRIVER_NOT_LOADED
//
// Without IX_FAKE_NVML_SCRIPT: 8 idle GPUs. A bad line makes nvmlInit_v2
// answer UNKNOWN after saying which line on stderr.
//
// What the GPUs read (load L, the same on every GPU):
//   power: the 1 s average (nvmlDeviceGetPowerUsage, field 185) is
//   idle + L * (busy - idle) exactly; the instant reading (field 186) adds
//   a ripple of at most 1.5 W, a sine of the time since the library
//   loaded. Milliwatts, as NVML.
//   energy (nvmlDeviceGetTotalEnergyConsumption, fields 83 and 191): mJ
//   since the library loaded, the average power integrated over wall time
//   (each read adds power * time since the last read).
//   temperature 30 + 45 L C; SM clock 345 + 1635 L MHz; memory clock
//   3201 MHz; utilisation 100 L % (memory 70 L %); of 143771 MiB, 512 MiB
//   reserved by the driver and 0.9 L allocated (nvmlDeviceGetMemoryInfo's
//   used counts both, _v2's only the allocated, as nvidia-smi shows);
//   ECC counts 0.
//
// Tests that dlopen the same path share this instance and may look up
// ixfake_nvml_calls(NAME) (how many times the NVML function NAME was
// called) and ixfake_nvml_reset_calls().
#include <math.h>
#include <time.h>
#include <unistd.h>

#include <bitset>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "node_agent/nvml_abi.h"

namespace ix::nvml {
// The handles' targets (opaque to callers).
struct nvmlDevice_st {
  unsigned index;
};
struct nvmlEventSet_st {
  std::bitset<64> xid;  // GPUs registered for Xid events
};
}  // namespace ix::nvml

#define NVML_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using namespace ix::nvml;  // NOLINT: the fake speaks only NVML's types
using nvmlReturn_t = Return;
using nvmlDevice_t = Device;
using nvmlEventSet_t = EventSet;

constexpr unsigned kMostGpus = 64;
constexpr double kMemoryTotalBytes = 143771.0 * 1024 * 1024;

// A script, as read.
struct Script {
  struct Xid {
    unsigned gpu = 0;
    double after = 0;
    unsigned long long code = 0;
  };
  unsigned gpus = 8;
  double idle_watts = 80, busy_watts = 680;
  std::string load_file;
  std::vector<Xid> xids;
  bool field_values = true;
  std::set<unsigned> unsupported;
  bool ecc = true;
  bool events = true;
  bool fail_init = false;
  std::set<std::string> not_supported;  // NVML function names
  std::set<unsigned> lost;               // GPUs
};

double MonotonicSeconds() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// All state, under one mutex.
struct State {
  std::mutex mu;
  Script script;
  int inits = 0;
  double loaded = MonotonicSeconds();  // the library's load
  double init_time = 0;                // the outermost nvmlInit_v2
  nvmlDevice_st devices[kMostGpus];
  double energy_mj[kMostGpus] = {};
  double energy_at[kMostGpus] = {};  // seconds since `loaded` of the last energy read
  std::vector<bool> xid_delivered;
  std::map<std::string, unsigned long> calls;
  State() {
    for (unsigned i = 0; i < kMostGpus; ++i) devices[i].index = i;
  }
};

State& S() {
  static State* s = new State;  // never destroyed (the library is never unloaded: -z nodelete)
  return *s;
}

// The clock of the energy counter starts when the library loads.
__attribute__((constructor)) void StartAtLoad() { S(); }

bool ParseLine(const std::string& line, Script& out, std::string& why) {
  std::istringstream in(line.substr(0, line.find('#')));
  std::string key;
  if (!(in >> key)) return true;
  std::string rest;
  auto number = [&](double& v, double lo, double hi) {
    return (in >> v) && v >= lo && v <= hi && !(in >> rest);
  };
  double v = 0;
  if (key == "gpus" && number(v, 0, kMostGpus) && v == floor(v)) {
    out.gpus = static_cast<unsigned>(v);
  } else if (key == "idle_watts" && number(v, 0, 5000)) {
    out.idle_watts = v;
  } else if (key == "busy_watts" && number(v, 0, 5000)) {
    out.busy_watts = v;
  } else if (key == "load_file" && (in >> out.load_file) && !(in >> rest)) {
  } else if (key == "xid") {
    Script::Xid x;
    if (!(in >> x.gpu >> x.after >> x.code) || x.gpu >= kMostGpus || x.after < 0 || (in >> rest)) {
      why = "expected 'xid GPU AFTER_SECONDS CODE'";
      return false;
    }
    out.xids.push_back(x);
  } else if ((key == "field_values" || key == "ecc" || key == "events") && (in >> rest) && rest == "off") {
    (key == "field_values" ? out.field_values : key == "ecc" ? out.ecc : out.events) = false;
  } else if (key == "unsupported" || key == "lost") {
    unsigned id = 0;
    while (in >> id) (key == "lost" ? out.lost : out.unsupported).insert(id);
    if (!in.eof()) {
      why = key == "lost" ? "expected GPU indices" : "expected field ids";
      return false;
    }
  } else if (key == "not_supported" && (in >> rest)) {
    do {
      out.not_supported.insert(rest);
    } while (in >> rest);
  } else if (key == "fail_init" && !(in >> rest)) {
    out.fail_init = true;
  } else {
    why = "not a directive or a bad value (tests/fakes/fake_nvml.cc lists them)";
    return false;
  }
  return true;
}

// The script from IX_FAKE_NVML_SCRIPT; false (said on stderr) when bad.
bool ReadScript(Script& out) {
  out = Script{};
  const char* path = std::getenv("IX_FAKE_NVML_SCRIPT");
  if (!path || !*path) return true;
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "fake libnvidia-ml: %s: cannot read: %s\n", path, std::strerror(errno));
    return false;
  }
  std::string line, why;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!ParseLine(line, out, why)) {
      std::fprintf(stderr, "fake libnvidia-ml: %s:%d: '%s': %s\n", path, n, line.c_str(), why.c_str());
      return false;
    }
  }
  return true;
}

// The load now: load_file's number, 0 when there is none.
double Load(const Script& script) {
  if (script.load_file.empty()) return 0;
  std::ifstream in(script.load_file);
  double load = 0;
  if (!in || !(in >> load) || !(load >= 0)) return 0;
  return load > 1 ? 1 : load;
}

double AverageWatts(const Script& s, double load) { return s.idle_watts + load * (s.busy_watts - s.idle_watts); }

// The GPU a handle names, under the lock; nullopt (and `rc`) when NVML is
// not initialised or the handle is not one of ours.
std::optional<unsigned> Gpu(State& s, nvmlDevice_t device, nvmlReturn_t& rc) {
  if (s.inits == 0) {
    rc = kErrorUninitialized;
    return std::nullopt;
  }
  for (unsigned i = 0; i < s.script.gpus; ++i) {
    if (device == &s.devices[i]) return i;
  }
  rc = kErrorInvalidArgument;
  return std::nullopt;
}

unsigned Round(double x) { return static_cast<unsigned>(x + 0.5); }

constexpr unsigned long long kReservedBytes = 512ull << 20;

unsigned long long AllocatedBytes(const State& s) {
  return static_cast<unsigned long long>(0.9 * Load(s.script) * kMemoryTotalBytes);
}

unsigned AverageMilliwatts(const State& s) { return Round(AverageWatts(s.script, Load(s.script)) * 1000); }

unsigned InstantMilliwatts(const State& s, unsigned gpu) {
  const double t = MonotonicSeconds() - s.loaded;
  const double ripple = 1.5 * sin(t * 2 * M_PI / 5 + gpu);
  const double w = AverageWatts(s.script, Load(s.script)) + ripple;
  return Round(w > 0 ? w * 1000 : 0);
}

unsigned long long EnergyMillijoules(State& s, unsigned gpu) {
  const double now = MonotonicSeconds() - s.loaded;
  s.energy_mj[gpu] += AverageWatts(s.script, Load(s.script)) * 1000 * (now - s.energy_at[gpu]);
  s.energy_at[gpu] = now;
  return static_cast<unsigned long long>(s.energy_mj[gpu]);
}

// One field of nvmlDeviceGetFieldValues.
void FillField(State& s, unsigned gpu, FieldValue& v) {
  const bool ecc_field = v.fieldId == kFieldEccSbeVolatileTotal || v.fieldId == kFieldEccDbeVolatileTotal;
  v.timestamp = static_cast<long long>(MonotonicSeconds() * 1e6);
  v.latencyUsec = 0;
  v.nvmlReturn = kSuccess;
  if (s.script.unsupported.count(v.fieldId) || (ecc_field && !s.script.ecc)) {
    v.nvmlReturn = kErrorNotSupported;
  } else if (v.fieldId == kFieldPowerAverage) {
    v.valueType = kValueUnsignedInt;
    v.value.uiVal = AverageMilliwatts(s);
  } else if (v.fieldId == kFieldPowerInstant) {
    v.valueType = kValueUnsignedInt;
    v.value.uiVal = InstantMilliwatts(s, gpu);
  } else if (v.fieldId == kFieldTotalEnergyConsumption || v.fieldId == 191) {  // 191: NVML_FI_DEV_ENERGY
    v.valueType = kValueUnsignedLongLong;
    v.value.ullVal = EnergyMillijoules(s, gpu);
  } else if (ecc_field) {
    v.valueType = kValueUnsignedLongLong;
    v.value.ullVal = 0;
  } else {
    v.nvmlReturn = kErrorNotSupported;
  }
}

nvmlReturn_t CopyText(const std::string& text, char* buf, unsigned length) {
  if (!buf) return kErrorInvalidArgument;
  if (text.size() + 1 > length) return kErrorInsufficientSize;
  std::memcpy(buf, text.c_str(), text.size() + 1);
  return kSuccess;
}

// Counts the call and locks; every exported function starts with it.
std::unique_lock<std::mutex> Enter(const char* name) {
  std::unique_lock<std::mutex> lock(S().mu);
  ++S().calls[name];
  return lock;
}

// Runs `read(gpu)` for a valid handle, under the lock.
template <class Read>
nvmlReturn_t OnGpu(const char* name, nvmlDevice_t device, Read read) {
  auto lock = Enter(name);
  nvmlReturn_t rc = kSuccess;
  const std::optional<unsigned> gpu = Gpu(S(), device, rc);
  if (gpu && S().script.lost.count(*gpu)) return kErrorGpuIsLost;
  if (gpu && S().script.not_supported.count(name)) return kErrorNotSupported;
  return gpu ? read(*gpu) : rc;
}

}  // namespace

NVML_EXPORT nvmlReturn_t nvmlInit_v2() {
  auto lock = Enter("nvmlInit_v2");
  State& s = S();
  if (s.inits > 0) {
    ++s.inits;
    return kSuccess;
  }
  if (!ReadScript(s.script)) return kErrorUnknown;
  if (s.script.fail_init) return kErrorDriverNotLoaded;
  s.init_time = MonotonicSeconds();
  s.xid_delivered.assign(s.script.xids.size(), false);
  s.inits = 1;
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlShutdown() {
  auto lock = Enter("nvmlShutdown");
  if (S().inits == 0) return kErrorUninitialized;
  --S().inits;
  return kSuccess;
}

NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case kSuccess: return "Success";
    case kErrorUninitialized: return "Uninitialized";
    case kErrorInvalidArgument: return "Invalid Argument";
    case kErrorNotSupported: return "Not Supported";
    case kErrorNoPermission: return "Insufficient Permissions";
    case kErrorNotFound: return "Not Found";
    case kErrorInsufficientSize: return "Insufficient Size";
    case kErrorDriverNotLoaded: return "Driver Not Loaded";
    case kErrorTimeout: return "Timeout";
    case kErrorFunctionNotFound: return "Function Not Found";
    case kErrorGpuIsLost: return "GPU is lost";
    case kErrorArgumentVersionMismatch: return "Argument Version Mismatch";
    default: return "Unknown Error";
  }
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  auto lock = Enter("nvmlSystemGetNVMLVersion");
  return CopyText("12.999.99", version, length);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  auto lock = Enter("nvmlSystemGetDriverVersion");
  if (S().inits == 0) return kErrorUninitialized;
  return CopyText("999.99 (fake)", version, length);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  auto lock = Enter("nvmlDeviceGetCount_v2");
  if (S().inits == 0) return kErrorUninitialized;
  if (!count) return kErrorInvalidArgument;
  *count = S().script.gpus;
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  auto lock = Enter("nvmlDeviceGetHandleByIndex_v2");
  if (S().inits == 0) return kErrorUninitialized;
  if (!device || index >= S().script.gpus) return kErrorInvalidArgument;
  *device = &S().devices[index];
  return kSuccess;
}

// Bus 0x10 + index, domain 0, as nvmlDeviceGetPciInfo_v3 writes them.
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, PciInfo* pci) {
  return OnGpu("nvmlDeviceGetPciInfo_v3", device, [&](unsigned gpu) {
    if (!pci) return kErrorInvalidArgument;
    std::memset(pci, 0, sizeof *pci);
    pci->bus = 0x10 + gpu;
    pci->pciDeviceId = 0x233510de;  // an H200's device and vendor id
    std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", pci->bus);
    std::snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", pci->bus);
    return kSuccess;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return OnGpu("nvmlDeviceGetUUID", device, [&](unsigned gpu) {
    char text[64];
    std::snprintf(text, sizeof text, "GPU-fa4e0000-0000-4000-8000-%012x", gpu);
    return CopyText(text, uuid, length);
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return OnGpu("nvmlDeviceGetName", device, [&](unsigned) { return CopyText("NVIDIA H200", name, length); });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, FieldValue* values) {
  return OnGpu("nvmlDeviceGetFieldValues", device, [&](unsigned gpu) {
    if (!S().script.field_values) return kErrorNotSupported;
    if (!values || valuesCount < 0) return kErrorInvalidArgument;
    for (int i = 0; i < valuesCount; ++i) FillField(S(), gpu, values[i]);
    return kSuccess;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return OnGpu("nvmlDeviceGetPowerUsage", device, [&](unsigned) {
    if (!power) return kErrorInvalidArgument;
    *power = AverageMilliwatts(S());
    return kSuccess;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy) {
  return OnGpu("nvmlDeviceGetTotalEnergyConsumption", device, [&](unsigned gpu) {
    if (!energy) return kErrorInvalidArgument;
    *energy = EnergyMillijoules(S(), gpu);
    return kSuccess;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensorType, unsigned int* temp) {
  return OnGpu("nvmlDeviceGetTemperature", device, [&](unsigned) {
    if (!temp || sensorType != kTemperatureGpu) return kErrorInvalidArgument;
    *temp = Round(30 + 45 * Load(S().script));
    return kSuccess;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int* clock) {
  return OnGpu("nvmlDeviceGetClockInfo", device, [&](unsigned) {
    if (!clock || type < 0 || type > 3) return kErrorInvalidArgument;
    const double load = Load(S().script);
    *clock = type == kClockMem ? 3201 : type == 3 ? Round(765 + 1000 * load) : Round(345 + 1635 * load);
    return kSuccess;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, Utilization* utilization) {
  return OnGpu("nvmlDeviceGetUtilizationRates", device, [&](unsigned) {
    if (!utilization) return kErrorInvalidArgument;
    const double load = Load(S().script);
    utilization->gpu = Round(100 * load);
    utilization->memory = Round(70 * load);
    return kSuccess;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, Memory* memory) {
  return OnGpu("nvmlDeviceGetMemoryInfo", device, [&](unsigned) {
    if (!memory) return kErrorInvalidArgument;
    memory->total = static_cast<unsigned long long>(kMemoryTotalBytes);
    memory->used = kReservedBytes + AllocatedBytes(S());
    memory->free = memory->total - memory->used;
    return kSuccess;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, MemoryV2* memory) {
  return OnGpu("nvmlDeviceGetMemoryInfo_v2", device, [&](unsigned) {
    if (!memory) return kErrorInvalidArgument;
    if (memory->version != kMemoryV2Version) return kErrorArgumentVersionMismatch;
    memory->total = static_cast<unsigned long long>(kMemoryTotalBytes);
    memory->reserved = kReservedBytes;
    memory->used = AllocatedBytes(S());
    memory->free = memory->total - memory->reserved - memory->used;
    return kSuccess;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType, int counterType,
                                                     unsigned long long* eccCounts) {
  return OnGpu("nvmlDeviceGetTotalEccErrors", device, [&](unsigned) {
    if (!eccCounts || errorType < 0 || errorType > 1 || counterType < 0 || counterType > 1) {
      return kErrorInvalidArgument;
    }
    if (!S().script.ecc) return kErrorNotSupported;
    *eccCounts = 0;
    return kSuccess;
  });
}

NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  auto lock = Enter("nvmlEventSetCreate");
  if (S().inits == 0) return kErrorUninitialized;
  if (!set) return kErrorInvalidArgument;
  *set = new nvmlEventSet_st;
  return kSuccess;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                                  nvmlEventSet_t set) {
  return OnGpu("nvmlDeviceRegisterEvents", device, [&](unsigned gpu) {
    if (!set || eventTypes == 0) return kErrorInvalidArgument;
    if (!S().script.events || (eventTypes & ~kEventTypeXidCriticalError)) return kErrorNotSupported;
    set->xid.set(gpu);
    return kSuccess;
  });
}

NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, EventData* data, unsigned int timeoutms) {
  const double deadline = MonotonicSeconds() + timeoutms / 1000.0;
  for (bool first = true;; first = false) {
    {
      auto lock = first ? Enter("nvmlEventSetWait_v2") : std::unique_lock<std::mutex>(S().mu);
      State& s = S();
      if (s.inits == 0) return kErrorUninitialized;
      if (!set || !data) return kErrorInvalidArgument;
      const double since_init = MonotonicSeconds() - s.init_time;
      for (size_t i = 0; i < s.script.xids.size(); ++i) {
        const Script::Xid& x = s.script.xids[i];
        if (s.xid_delivered[i] || x.gpu >= s.script.gpus || !set->xid.test(x.gpu) || x.after > since_init) continue;
        s.xid_delivered[i] = true;
        data->device = &s.devices[x.gpu];
        data->eventType = kEventTypeXidCriticalError;
        data->eventData = x.code;
        data->gpuInstanceId = 0xFFFFFFFF;
        data->computeInstanceId = 0xFFFFFFFF;
        return kSuccess;
      }
    }
    if (MonotonicSeconds() >= deadline) return kErrorTimeout;
    usleep(1000);
  }
}

NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  auto lock = Enter("nvmlEventSetFree");
  delete set;
  return kSuccess;
}

// Test hooks (not NVML): how often NAME was called since the last reset.
NVML_EXPORT unsigned long ixfake_nvml_calls(const char* name) {
  std::lock_guard<std::mutex> lock(S().mu);
  const auto it = S().calls.find(name ? name : "");
  return it == S().calls.end() ? 0 : it->second;
}

NVML_EXPORT void ixfake_nvml_reset_calls() {
  std::lock_guard<std::mutex> lock(S().mu);
  S().calls.clear();
}
