// The part of NVML's C ABI (nvml.h) that the agent's sampler calls and that
// tests/fakes/fake_nvml.cc implements: types, constants and the function
// types, transcribed from NVIDIA's nvml.h (API version 12/13; the copy in
// NVIDIA/go-nvml gen/nvml/nvml.h). NVML promises these never change: field
// ids are "only used once and guaranteed never to change", and the structs
// below are unversioned ones whose layout has stayed the same since they
// appeared (nvmlValue_t gained members, none wider than 8 bytes). The
// static_asserts pin the sizes and offsets nvml.h gives on x86-64/aarch64.
//
// nvml.h itself is not used: it is not on build machines without the CUDA
// toolkit, and the library is loaded with dlopen anyway.
#pragma once

#include <cstddef>

namespace ix::nvml {

using Return = int;  // nvmlReturn_t, an enum
using Device = struct nvmlDevice_st*;
using EventSet = struct nvmlEventSet_st*;

// nvmlReturn_t values the sampler tells apart.
constexpr Return kSuccess = 0;
constexpr Return kErrorUninitialized = 1;
constexpr Return kErrorInvalidArgument = 2;
constexpr Return kErrorNotSupported = 3;
constexpr Return kErrorNoPermission = 4;
constexpr Return kErrorNotFound = 6;
constexpr Return kErrorInsufficientSize = 7;
constexpr Return kErrorDriverNotLoaded = 9;
constexpr Return kErrorTimeout = 10;
constexpr Return kErrorFunctionNotFound = 13;
constexpr Return kErrorGpuIsLost = 15;
constexpr Return kErrorArgumentVersionMismatch = 25;  // a versioned struct the driver does not know
constexpr Return kErrorUnknown = 999;

// nvmlValueType_t.
constexpr int kValueDouble = 0;
constexpr int kValueUnsignedInt = 1;
constexpr int kValueUnsignedLong = 2;
constexpr int kValueUnsignedLongLong = 3;
constexpr int kValueSignedLongLong = 4;
constexpr int kValueSignedInt = 5;
constexpr int kValueUnsignedShort = 6;

// Field ids (NVML_FI_*) for nvmlDeviceGetFieldValues. There are none for
// the GPU temperature, clocks, utilisation or memory use.
constexpr unsigned kFieldEccSbeVolatileTotal = 3;         // NVML_FI_DEV_ECC_SBE_VOL_TOTAL (corrected)
constexpr unsigned kFieldEccDbeVolatileTotal = 4;         // NVML_FI_DEV_ECC_DBE_VOL_TOTAL (uncorrected)
constexpr unsigned kFieldTotalEnergyConsumption = 83;     // NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ
constexpr unsigned kFieldPowerAverage = 185;              // NVML_FI_DEV_POWER_AVERAGE, mW over 1 s
constexpr unsigned kFieldPowerInstant = 186;              // NVML_FI_DEV_POWER_INSTANT, mW

// nvmlTemperatureSensors_t, nvmlClockType_t, nvmlMemoryErrorType_t,
// nvmlEccCounterType_t.
constexpr int kTemperatureGpu = 0;     // NVML_TEMPERATURE_GPU
constexpr int kClockSm = 1;            // NVML_CLOCK_SM
constexpr int kClockMem = 2;           // NVML_CLOCK_MEM
constexpr int kMemoryErrorCorrected = 0;    // NVML_MEMORY_ERROR_TYPE_CORRECTED
constexpr int kMemoryErrorUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatileEcc = 0;        // NVML_VOLATILE_ECC

constexpr unsigned long long kEventTypeXidCriticalError = 0x8;  // nvmlEventTypeXidCriticalError

// Buffer sizes (NVML_DEVICE_UUID_V2_BUFFER_SIZE, NVML_DEVICE_NAME_V2_BUFFER_SIZE,
// NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE).
constexpr unsigned kUuidBufferSize = 96;
constexpr unsigned kNameBufferSize = 96;
constexpr unsigned kVersionBufferSize = 80;

// nvmlValue_t.
union Value {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
};

// nvmlFieldValue_t.
struct FieldValue {
  unsigned int fieldId;
  unsigned int scopeId;  // 0: the GPU alone (power fields: 1 would be the module)
  long long timestamp;    // microseconds since 1970
  long long latencyUsec;
  int valueType;          // nvmlValueType_t
  Return nvmlReturn;      // check before `value`
  Value value;
};

// nvmlUtilization_t (percent over the driver's last sample period).
struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};

// nvmlMemory_t (v1, bytes; `used` counts what the driver reserves).
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvmlMemory_v2_t: `used` without what the driver and firmware reserve
// (what nvidia-smi prints as memory.used), `reserved` apart. `version`
// must be kMemoryV2Version (NVML_STRUCT_VERSION(Memory, 2)).
struct MemoryV2 {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
constexpr unsigned int kMemoryV2Version = static_cast<unsigned int>(sizeof(MemoryV2)) | (2u << 24);

// nvmlEventData_t (the two instance ids were added in NVML 11; a driver
// older than that writes only the first three members).
struct EventData {
  Device device;
  unsigned long long eventType;
  unsigned long long eventData;  // the Xid for nvmlEventTypeXidCriticalError
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 fills it.
struct PciInfo {
  char busIdLegacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
};

static_assert(sizeof(Value) == 8);
static_assert(sizeof(FieldValue) == 40 && offsetof(FieldValue, timestamp) == 8 &&
              offsetof(FieldValue, valueType) == 24 && offsetof(FieldValue, nvmlReturn) == 28 &&
              offsetof(FieldValue, value) == 32);
static_assert(sizeof(Utilization) == 8 && sizeof(Memory) == 24);
static_assert(sizeof(MemoryV2) == 40 && offsetof(MemoryV2, total) == 8 && kMemoryV2Version == 0x02000028);
static_assert(sizeof(EventData) == 32 && offsetof(EventData, eventData) == 16);
static_assert(sizeof(PciInfo) == 68 && offsetof(PciInfo, busId) == 36);

// The functions, by their nvml.h signatures.
using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using ErrorStringFn = const char* (*)(Return);
using SystemGetVersionFn = Return (*)(char*, unsigned int);  // NVML and driver version
using DeviceGetCountFn = Return (*)(unsigned int*);
using DeviceGetHandleByIndexFn = Return (*)(unsigned int, Device*);
using DeviceGetTextFn = Return (*)(Device, char*, unsigned int);  // uuid, name
using DeviceGetFieldValuesFn = Return (*)(Device, int, FieldValue*);
using DeviceGetPowerUsageFn = Return (*)(Device, unsigned int*);
using DeviceGetTotalEnergyConsumptionFn = Return (*)(Device, unsigned long long*);
using DeviceGetTemperatureFn = Return (*)(Device, int, unsigned int*);
using DeviceGetClockInfoFn = Return (*)(Device, int, unsigned int*);
using DeviceGetUtilizationRatesFn = Return (*)(Device, Utilization*);
using DeviceGetMemoryInfoFn = Return (*)(Device, Memory*);
using DeviceGetMemoryInfoV2Fn = Return (*)(Device, MemoryV2*);
using DeviceGetTotalEccErrorsFn = Return (*)(Device, int, int, unsigned long long*);
using EventSetCreateFn = Return (*)(EventSet*);
using DeviceRegisterEventsFn = Return (*)(Device, unsigned long long, EventSet);
using EventSetWaitFn = Return (*)(EventSet, EventData*, unsigned int);
using EventSetFreeFn = Return (*)(EventSet);

}  // namespace ix::nvml
