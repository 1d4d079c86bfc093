#include "node_agent/nvml_sampler.h"

#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "core/base/dl_symbol.h"
#include "node_agent/nvml_abi.h"

namespace ix {
namespace {


// The NVML functions, resolved once. The first five are required; any
// other may be null (an older driver), and what it reads is then unset.
struct NvmlApi {
  nvml::InitFn init = nullptr;
  nvml::ShutdownFn shutdown = nullptr;
  nvml::DeviceGetCountFn count = nullptr;
  nvml::DeviceGetHandleByIndexFn handle = nullptr;
  nvml::ErrorStringFn error_string = nullptr;
  nvml::SystemGetVersionFn nvml_version = nullptr;
  nvml::SystemGetVersionFn driver_version = nullptr;
  nvml::DeviceGetTextFn uuid = nullptr;
  nvml::DeviceGetTextFn name = nullptr;
  nvml::DeviceGetFieldValuesFn field_values = nullptr;
  nvml::DeviceGetPowerUsageFn power = nullptr;
  nvml::DeviceGetTotalEnergyConsumptionFn energy = nullptr;
  nvml::DeviceGetTemperatureFn temperature = nullptr;
  nvml::DeviceGetClockInfoFn clock = nullptr;
  nvml::DeviceGetUtilizationRatesFn utilization = nullptr;
  nvml::DeviceGetMemoryInfoFn memory = nullptr;
  nvml::DeviceGetMemoryInfoV2Fn memory_v2 = nullptr;
  nvml::DeviceGetTotalEccErrorsFn ecc = nullptr;
  nvml::EventSetCreateFn event_set_create = nullptr;
  nvml::DeviceRegisterEventsFn register_events = nullptr;
  nvml::EventSetWaitFn event_wait = nullptr;
  nvml::EventSetFreeFn event_set_free = nullptr;

  void Load(void* lib) {
    init = DlSymbol<nvml::InitFn>(lib, "nvmlInit_v2");
    shutdown = DlSymbol<nvml::ShutdownFn>(lib, "nvmlShutdown");
    count = DlSymbol<nvml::DeviceGetCountFn>(lib, "nvmlDeviceGetCount_v2");
    handle = DlSymbol<nvml::DeviceGetHandleByIndexFn>(lib, "nvmlDeviceGetHandleByIndex_v2");
    error_string = DlSymbol<nvml::ErrorStringFn>(lib, "nvmlErrorString");
    nvml_version = DlSymbol<nvml::SystemGetVersionFn>(lib, "nvmlSystemGetNVMLVersion");
    driver_version = DlSymbol<nvml::SystemGetVersionFn>(lib, "nvmlSystemGetDriverVersion");
    uuid = DlSymbol<nvml::DeviceGetTextFn>(lib, "nvmlDeviceGetUUID");
    name = DlSymbol<nvml::DeviceGetTextFn>(lib, "nvmlDeviceGetName");
    field_values = DlSymbol<nvml::DeviceGetFieldValuesFn>(lib, "nvmlDeviceGetFieldValues");
    power = DlSymbol<nvml::DeviceGetPowerUsageFn>(lib, "nvmlDeviceGetPowerUsage");
    energy = DlSymbol<nvml::DeviceGetTotalEnergyConsumptionFn>(lib, "nvmlDeviceGetTotalEnergyConsumption");
    temperature = DlSymbol<nvml::DeviceGetTemperatureFn>(lib, "nvmlDeviceGetTemperature");
    clock = DlSymbol<nvml::DeviceGetClockInfoFn>(lib, "nvmlDeviceGetClockInfo");
    utilization = DlSymbol<nvml::DeviceGetUtilizationRatesFn>(lib, "nvmlDeviceGetUtilizationRates");
    memory = DlSymbol<nvml::DeviceGetMemoryInfoFn>(lib, "nvmlDeviceGetMemoryInfo");
    memory_v2 = DlSymbol<nvml::DeviceGetMemoryInfoV2Fn>(lib, "nvmlDeviceGetMemoryInfo_v2");
    ecc = DlSymbol<nvml::DeviceGetTotalEccErrorsFn>(lib, "nvmlDeviceGetTotalEccErrors");
    event_set_create = DlSymbol<nvml::EventSetCreateFn>(lib, "nvmlEventSetCreate");
    register_events = DlSymbol<nvml::DeviceRegisterEventsFn>(lib, "nvmlDeviceRegisterEvents");
    event_wait = DlSymbol<nvml::EventSetWaitFn>(lib, "nvmlEventSetWait_v2");
    event_set_free = DlSymbol<nvml::EventSetFreeFn>(lib, "nvmlEventSetFree");
  }
  bool HasRequired() const { return init && shutdown && count && handle; }
};

// An answer that will not change for this GPU: not asked again. (Per
// field, INVALID_ARGUMENT is how a driver older than the field id answers:
// ReadBatch counts it too.)
bool Permanent(nvml::Return rc) {
  return rc == nvml::kErrorNotSupported || rc == nvml::kErrorFunctionNotFound || rc == nvml::kErrorNoPermission ||
         rc == nvml::kErrorArgumentVersionMismatch;
}

// What a GPU is asked for; a bit each in Gpu::unsupported.
enum Reading : unsigned {
  kPower,
  kEnergy,
  kTemperature,
  kSmClock,
  kMemoryClock,
  kUtilization,
  kMemory,
  kMemoryV2,
  kEccCorrected,
  kEccUncorrected,
  kReadingCount
};

// What the batch asks first: both power readings (power.draw below says
// which one is used), the energy counter and the volatile ECC totals.
constexpr std::array<unsigned, 5> kBatchFields = {nvml::kFieldPowerAverage, nvml::kFieldPowerInstant,
                                                  nvml::kFieldTotalEnergyConsumption, nvml::kFieldEccSbeVolatileTotal,
                                                  nvml::kFieldEccDbeVolatileTotal};

// One GPU as opened, and what it has answered so far. Invariant: `fields`
// holds only ids of kBatchFields, none the GPU answered "not supported".
struct Gpu {
  unsigned index = 0;
  nvml::Device device = nullptr;
  std::string uuid;
  std::string name;
  bool batch = true;  // false: nvmlDeviceGetFieldValues is not supported here
  std::vector<unsigned> fields{kBatchFields.begin(), kBatchFields.end()};
  std::bitset<kReadingCount> unsupported;  // single calls not to make again
  bool xid_registered = false;
  uint64_t xids = 0;
  // The energy counter costs ~4 ms a GPU on the cloud VMs measured (every
  // other reading ~1 us): it is read every kEnergyEvery seconds and the last
  // reading is reported in between (a counter a few seconds old).
  std::optional<double> energy_joules;
  double energy_read_at = -1e300;
};

constexpr double kEnergyEvery = 10;

// A field's value as an unsigned integer, whatever type NVML gave it in.
std::optional<uint64_t> AsUnsigned(const nvml::FieldValue& v) {
  switch (v.valueType) {
    case nvml::kValueUnsignedInt: return v.value.uiVal;
    case nvml::kValueUnsignedLong: return v.value.ulVal;
    case nvml::kValueUnsignedLongLong: return v.value.ullVal;
    case nvml::kValueUnsignedShort: return v.value.usVal;
    case nvml::kValueSignedInt:
      if (v.value.siVal >= 0) return static_cast<uint64_t>(v.value.siVal);
      return std::nullopt;
    case nvml::kValueSignedLongLong:
      if (v.value.sllVal >= 0) return static_cast<uint64_t>(v.value.sllVal);
      return std::nullopt;
    case nvml::kValueDouble:
      if (v.value.dVal >= 0 && v.value.dVal < 1.8e19) return static_cast<uint64_t>(v.value.dVal + 0.5);
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

double NowUnixSeconds() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// A source that never samples: NVML absent or unusable.
class UnavailableNvml : public GpuSource {
 public:
  UnavailableNvml(std::string state, std::string detail) {
    snapshot_.state = std::move(state);
    snapshot_.detail = std::move(detail);
  }
  GpuSnapshot Sample() override { return snapshot_; }

 private:
  GpuSnapshot snapshot_;
};

// NVML loaded and initialised; owns the library handle.
class NvmlSampler : public GpuSource {
 public:
  NvmlSampler(void* lib, const NvmlApi& api) : lib_(lib), api_(api) {}
  ~NvmlSampler() override {
    if (events_ && api_.event_set_free) api_.event_set_free(events_);
    api_.shutdown();
    dlclose(lib_);
  }
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  // After nvmlInit_v2: the GPUs, their names and the Xid event set. An
  // error (the count) is returned as text.
  std::optional<std::string> Open();
  GpuSnapshot Sample() override;

 private:
  std::string Failure(const char* call, nvml::Return rc) const {
    const char* s = api_.error_string ? api_.error_string(rc) : nullptr;
    return std::string(call) + " failed: " + (s ? s : "error " + std::to_string(rc));
  }
  std::string Text(nvml::SystemGetVersionFn fn) const;
  std::string DeviceText(nvml::DeviceGetTextFn fn, nvml::Device device) const;
  void OpenXidEvents();
  void DrainXid(std::vector<std::string>& problems);
  void ReadBatch(Gpu& g, GpuSample& s, std::bitset<kReadingCount>& got, std::vector<std::string>& problems);
  void ReadSingles(Gpu& g, GpuSample& s, const std::bitset<kReadingCount>& got, std::vector<std::string>& problems);
  // Calls `fn(device, args...)` unless the GPU said "not supported" to
  // `reading` before; true when it answered.
  template <class Fn, class... Args>
  bool Ask(Gpu& g, Reading reading, const char* call, Fn fn, std::vector<std::string>& problems, Args... args);

  void* lib_;
  NvmlApi api_;
  std::string version_;
  std::vector<Gpu> gpus_;
  std::vector<std::string> open_problems_;  // GPUs left out when opening
  nvml::EventSet events_ = nullptr;
};

std::string NvmlSampler::Text(nvml::SystemGetVersionFn fn) const {
  char buf[nvml::kVersionBufferSize] = {};
  if (!fn || fn(buf, sizeof buf) != nvml::kSuccess) return "";
  buf[sizeof buf - 1] = '\0';
  return buf;
}

std::string NvmlSampler::DeviceText(nvml::DeviceGetTextFn fn, nvml::Device device) const {
  char buf[nvml::kUuidBufferSize > nvml::kNameBufferSize ? nvml::kUuidBufferSize : nvml::kNameBufferSize] = {};
  if (!fn || fn(device, buf, sizeof buf) != nvml::kSuccess) return "";
  buf[sizeof buf - 1] = '\0';
  return buf;
}

std::optional<std::string> NvmlSampler::Open() {
  const std::string nvml = Text(api_.nvml_version);
  const std::string driver = Text(api_.driver_version);
  version_ = "NVML " + (nvml.empty() ? std::string("(version unknown)") : nvml);
  if (!driver.empty()) version_ += ", driver " + driver;
  unsigned n = 0;
  if (nvml::Return rc = api_.count(&n); rc != nvml::kSuccess) return Failure("nvmlDeviceGetCount_v2", rc);
  for (unsigned i = 0; i < n; ++i) {
    Gpu g;
    g.index = i;
    if (nvml::Return rc = api_.handle(i, &g.device); rc != nvml::kSuccess) {
      open_problems_.push_back("GPU " + std::to_string(i) + " not sampled: " +
                               Failure("nvmlDeviceGetHandleByIndex_v2", rc));
      continue;
    }
    g.uuid = DeviceText(api_.uuid, g.device);
    g.name = DeviceText(api_.name, g.device);
    gpus_.push_back(std::move(g));
  }
  OpenXidEvents();
  return std::nullopt;
}

// Critical Xid errors are counted from now on, on the GPUs that accept the
// registration (others leave xid_events unset).
void NvmlSampler::OpenXidEvents() {
  if (!api_.event_set_create || !api_.register_events || !api_.event_wait) return;
  if (api_.event_set_create(&events_) != nvml::kSuccess) {
    events_ = nullptr;
    return;
  }
  for (Gpu& g : gpus_) {
    g.xid_registered = api_.register_events(g.device, nvml::kEventTypeXidCriticalError, events_) == nvml::kSuccess;
  }
}

// Takes every event already waiting (timeout 0: never blocks), bounded so
// an Xid storm cannot hold the sample up; the rest wait for the next one.
void NvmlSampler::DrainXid(std::vector<std::string>& problems) {
  if (!events_) return;
  constexpr int kMostEventsPerSample = 256;
  for (int i = 0; i < kMostEventsPerSample; ++i) {
    nvml::EventData e;
    std::memset(&e, 0, sizeof e);
    const nvml::Return rc = api_.event_wait(events_, &e, 0);
    if (rc == nvml::kErrorTimeout) return;
    if (rc != nvml::kSuccess) {
      problems.push_back(Failure("nvmlEventSetWait_v2", rc));
      return;
    }
    if (!(e.eventType & nvml::kEventTypeXidCriticalError)) continue;
    for (Gpu& g : gpus_) {
      if (g.device == e.device && g.xid_registered) ++g.xids;
    }
  }
}

// power.draw, as nvidia-smi prints it: nvidia-smi's --help-query-gpu says
// "power.draw: ... On Ampere or newer devices, returns average power draw
// over 1 sec. On older devices, returns instantaneous power draw", and
// nvml.h says the same of nvmlDeviceGetPowerUsage, which nvidia-smi reads
// ("On Ampere (except GA100) or newer GPUs, the API returns power averaged
// over 1 sec interval. On GA100 and older architectures, instantaneous
// power is returned"). The field NVML_FI_DEV_POWER_AVERAGE is that average
// ("supported on Ampere (except GA100) or newer"), NVML_FI_DEV_POWER_INSTANT
// the instant reading ("supported on all architectures"). So: the average
// where the GPU has it (an H100/H200), else the instant reading, which is
// exactly what nvmlDeviceGetPowerUsage, the fallback, returns on either.
void NvmlSampler::ReadBatch(Gpu& g, GpuSample& s, std::bitset<kReadingCount>& got,
                            std::vector<std::string>& problems) {
  if (!api_.field_values || !g.batch || g.fields.empty()) return;
  std::array<nvml::FieldValue, kBatchFields.size()> values;
  std::memset(values.data(), 0, sizeof values);  // scopeId 0: the GPU alone
  const bool energy_due = s.unix_time - g.energy_read_at >= kEnergyEvery;
  int n = 0;
  for (unsigned field : g.fields) {
    if (field != nvml::kFieldTotalEnergyConsumption || energy_due) values[static_cast<size_t>(n++)].fieldId = field;
  }
  // Not due: taken as read (the last reading stands), never asked singly.
  if (!energy_due) got[kEnergy] = true;
  const nvml::Return rc = api_.field_values(g.device, n, values.data());
  if (Permanent(rc)) {
    g.batch = false;
    return;
  }
  if (rc != nvml::kSuccess) {
    problems.push_back("GPU " + std::to_string(g.index) + ": " + Failure("nvmlDeviceGetFieldValues", rc));
    return;
  }
  std::optional<uint64_t> average_mw, instant_mw;
  std::vector<unsigned> still;
  if (!energy_due && std::find(g.fields.begin(), g.fields.end(), nvml::kFieldTotalEnergyConsumption) != g.fields.end()) {
    still.push_back(nvml::kFieldTotalEnergyConsumption);
  }
  for (int i = 0; i < n; ++i) {
    const nvml::FieldValue& v = values[static_cast<size_t>(i)];
    if (Permanent(v.nvmlReturn) || v.nvmlReturn == nvml::kErrorInvalidArgument) continue;  // not asked again
    still.push_back(v.fieldId);
    const std::optional<uint64_t> x = v.nvmlReturn == nvml::kSuccess ? AsUnsigned(v) : std::nullopt;
    if (!x) continue;  // a passing failure: the single call this time
    switch (v.fieldId) {
      case nvml::kFieldPowerAverage: average_mw = x; break;
      case nvml::kFieldPowerInstant: instant_mw = x; break;
      case nvml::kFieldTotalEnergyConsumption:
        g.energy_joules = static_cast<double>(*x) / 1000.0;
        g.energy_read_at = s.unix_time;
        got[kEnergy] = true;
        break;
      case nvml::kFieldEccSbeVolatileTotal:
        s.ecc_corrected_errors = *x;
        got[kEccCorrected] = true;
        break;
      case nvml::kFieldEccDbeVolatileTotal:
        s.ecc_uncorrected_errors = *x;
        got[kEccUncorrected] = true;
        break;
      default: break;
    }
  }
  g.fields = std::move(still);
  if (const std::optional<uint64_t> mw = average_mw ? average_mw : instant_mw) {
    s.power_watts = static_cast<double>(*mw) / 1000.0;
    got[kPower] = true;
  }
}

template <class Fn, class... Args>
bool NvmlSampler::Ask(Gpu& g, Reading reading, const char* call, Fn fn, std::vector<std::string>& problems,
                      Args... args) {
  if (g.unsupported[reading]) return false;
  if (!fn) {
    g.unsupported[reading] = true;
    return false;
  }
  const nvml::Return rc = fn(g.device, args...);
  if (rc == nvml::kSuccess) return true;
  if (Permanent(rc)) {
    g.unsupported[reading] = true;
  } else {
    problems.push_back("GPU " + std::to_string(g.index) + ": " + Failure(call, rc));
  }
  return false;
}

void NvmlSampler::ReadSingles(Gpu& g, GpuSample& s, const std::bitset<kReadingCount>& got,
                              std::vector<std::string>& problems) {
  unsigned u = 0;
  unsigned long long ull = 0;
  if (!got[kPower] && Ask(g, kPower, "nvmlDeviceGetPowerUsage", api_.power, problems, &u)) {
    s.power_watts = u / 1000.0;
  }
  if (!got[kEnergy] && s.unix_time - g.energy_read_at >= kEnergyEvery &&
      Ask(g, kEnergy, "nvmlDeviceGetTotalEnergyConsumption", api_.energy, problems, &ull)) {
    g.energy_joules = static_cast<double>(ull) / 1000.0;
    g.energy_read_at = s.unix_time;
  }
  s.energy_joules = g.energy_joules;
  if (Ask(g, kTemperature, "nvmlDeviceGetTemperature", api_.temperature, problems, nvml::kTemperatureGpu, &u)) {
    s.temperature_celsius = u;
  }
  if (Ask(g, kSmClock, "nvmlDeviceGetClockInfo", api_.clock, problems, nvml::kClockSm, &u)) s.sm_clock_mhz = u;
  if (Ask(g, kMemoryClock, "nvmlDeviceGetClockInfo", api_.clock, problems, nvml::kClockMem, &u)) {
    s.memory_clock_mhz = u;
  }
  nvml::Utilization util{};
  if (Ask(g, kUtilization, "nvmlDeviceGetUtilizationRates", api_.utilization, problems, &util)) {
    s.gpu_utilization_percent = util.gpu;
    s.memory_utilization_percent = util.memory;
  }
  // nvidia-smi's memory.used leaves out what the driver reserves (about
  // 0.5 GiB of an H100): the v2 call where the driver has it, else v1.
  nvml::MemoryV2 mem2{};
  mem2.version = nvml::kMemoryV2Version;
  nvml::Memory mem{};
  if (Ask(g, kMemoryV2, "nvmlDeviceGetMemoryInfo_v2", api_.memory_v2, problems, &mem2)) {
    s.memory_used_bytes = mem2.used;
    s.memory_total_bytes = mem2.total;
  } else if (g.unsupported[kMemoryV2] && Ask(g, kMemory, "nvmlDeviceGetMemoryInfo", api_.memory, problems, &mem)) {
    s.memory_used_bytes = mem.used;
    s.memory_total_bytes = mem.total;
  }
  if (!got[kEccCorrected] && Ask(g, kEccCorrected, "nvmlDeviceGetTotalEccErrors", api_.ecc, problems,
                                 nvml::kMemoryErrorCorrected, nvml::kVolatileEcc, &ull)) {
    s.ecc_corrected_errors = ull;
  }
  if (!got[kEccUncorrected] && Ask(g, kEccUncorrected, "nvmlDeviceGetTotalEccErrors", api_.ecc, problems,
                                   nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc, &ull)) {
    s.ecc_uncorrected_errors = ull;
  }
}

GpuSnapshot NvmlSampler::Sample() {
  GpuSnapshot snap;
  snap.state = "ok";
  snap.version = version_;
  std::vector<std::string> problems = open_problems_;
  DrainXid(problems);
  // One time for the whole set: the rows of one interval share it.
  const double now = NowUnixSeconds();
  for (Gpu& g : gpus_) {
    GpuSample s;
    s.index = g.index;
    s.uuid = g.uuid;
    s.name = g.name;
    s.unix_time = now;
    std::bitset<kReadingCount> got;
    std::vector<std::string> gpu_problems;
    ReadBatch(g, s, got, gpu_problems);
    ReadSingles(g, s, got, gpu_problems);
    // A lost GPU fails every call: its first failure says enough.
    if (!gpu_problems.empty()) {
      const size_t more = gpu_problems.size() - 1;
      problems.push_back(gpu_problems[0] + (more ? " (and " + std::to_string(more) + " more calls)" : ""));
    }
    if (g.xid_registered) s.xid_events = g.xids;
    snap.gpus.push_back(std::move(s));
  }
  for (const std::string& p : problems) snap.detail += (snap.detail.empty() ? "" : "; ") + p;
  return snap;
}

}  // namespace

std::string NvmlLibraryFromEnv() {
  const char* lib = std::getenv("IX_NVML_LIBRARY");
  return lib && *lib ? lib : "libnvidia-ml.so.1";
}

std::unique_ptr<GpuSource> OpenNvml(const std::string& library) {
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return std::make_unique<UnavailableNvml>(
        "absent", "NVML not present: cannot load " + library + (why ? std::string(": ") + why : std::string()));
  }
  NvmlApi api;
  api.Load(lib);
  if (!api.HasRequired()) {
    dlclose(lib);
    return std::make_unique<UnavailableNvml>(
        "failed", library + " lacks nvmlInit_v2, nvmlShutdown, nvmlDeviceGetCount_v2 or "
                            "nvmlDeviceGetHandleByIndex_v2 (a driver older than NVML 8?)");
  }
  if (nvml::Return rc = api.init(); rc != nvml::kSuccess) {
    const char* s = api.error_string ? api.error_string(rc) : nullptr;
    // The text is the library's: copied before dlclose.
    std::string detail = "nvmlInit_v2 failed: " + (s ? std::string(s) : "error " + std::to_string(rc));
    dlclose(lib);
    return std::make_unique<UnavailableNvml>("failed", std::move(detail));
  }
  auto sampler = std::make_unique<NvmlSampler>(lib, api);  // owns lib from here: shuts down and closes
  if (std::optional<std::string> failure = sampler->Open()) {
    return std::make_unique<UnavailableNvml>("failed", *failure);
  }
  return sampler;
}

}  // namespace ix
