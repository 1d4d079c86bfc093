// MakeSystemNvml: NVML loaded with dlopen when the driver is there. Apart
// from topology.cc so that programs which only read CPUs and NUMA nodes
// from sysfs (ix-stepd, linked statically) do not link dlopen.
#include <dlfcn.h>

#include <cstring>
#include <memory>

#include "core/base/dl_symbol.h"
#include "core/node/topology.h"

namespace ix {

namespace {

// The part of nvml.h this needs (NVML API reference, nvmlPciInfo_t).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};


class DlNvml : public NvmlSource {
 public:
  NvmlGpus List() const override {
    NvmlGpus out;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      out.state = NvmlGpus::State::kAbsent;
      out.detail = std::string("NVML not present: cannot load libnvidia-ml.so.1") + (why ? std::string(": ") + why : "");
      return out;
    }
    out = Query(lib);
    dlclose(lib);
    return out;
  }

 private:
  static NvmlGpus Query(void* lib) {
    NvmlGpus out;
    out.state = NvmlGpus::State::kFailed;
    auto init = DlSymbol<nvmlReturn_t (*)()>(lib, "nvmlInit_v2");
    auto shutdown = DlSymbol<nvmlReturn_t (*)()>(lib, "nvmlShutdown");
    auto count = DlSymbol<nvmlReturn_t (*)(unsigned*)>(lib, "nvmlDeviceGetCount_v2");
    auto handle = DlSymbol<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>(lib, "nvmlDeviceGetHandleByIndex_v2");
    auto pci = DlSymbol<nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*)>(lib, "nvmlDeviceGetPciInfo_v3");
    auto error_string = DlSymbol<const char* (*)(nvmlReturn_t)>(lib, "nvmlErrorString");
    if (!init || !shutdown || !count || !handle || !pci) {
      out.detail = "libnvidia-ml.so.1 lacks nvmlInit_v2/nvmlDeviceGetCount_v2/nvmlDeviceGetHandleByIndex_v2/"
                   "nvmlDeviceGetPciInfo_v3 (driver too old?)";
      return out;
    }
    auto text = [&](const char* call, nvmlReturn_t rc) {
      const char* s = error_string ? error_string(rc) : nullptr;
      return std::string(call) + " failed: " + (s ? s : "error " + std::to_string(rc));
    };
    if (nvmlReturn_t rc = init(); rc != 0) {
      out.detail = text("nvmlInit_v2", rc);
      return out;
    }
    unsigned n = 0;
    if (nvmlReturn_t rc = count(&n); rc != 0) {
      out.detail = text("nvmlDeviceGetCount_v2", rc);
      shutdown();
      return out;
    }
    for (unsigned i = 0; i < n; ++i) {
      nvmlDevice_t dev = nullptr;
      nvmlPciInfo_t info;
      std::memset(&info, 0, sizeof info);
      if (nvmlReturn_t rc = handle(i, &dev); rc != 0) {
        out.detail = text("nvmlDeviceGetHandleByIndex_v2", rc) + " for device " + std::to_string(i);
        shutdown();
        return out;
      }
      if (nvmlReturn_t rc = pci(dev, &info); rc != 0) {
        out.detail = text("nvmlDeviceGetPciInfo_v3", rc) + " for device " + std::to_string(i);
        shutdown();
        return out;
      }
      info.busId[sizeof info.busId - 1] = '\0';
      info.busIdLegacy[sizeof info.busIdLegacy - 1] = '\0';
      Result<std::string> id = NormalizeBusId(info.busId[0] ? info.busId : info.busIdLegacy);
      if (!id) {
        out.detail = "NVML device " + std::to_string(i) + ": " + id.error().message;
        shutdown();
        return out;
      }
      out.bus_ids.push_back(id.value());
    }
    shutdown();
    out.state = NvmlGpus::State::kOk;
    return out;
  }
};

}  // namespace

std::unique_ptr<NvmlSource> MakeSystemNvml() { return std::make_unique<DlNvml>(); }

}  // namespace ix
