// The sampler against tests/fakes' libnvidia-ml.so.1 (fake_nvml.cc), loaded
// by its path; the fake's script (IX_FAKE_NVML_SCRIPT) makes the GPUs, and
// its call counters tell which NVML calls a sample made.
#include "node_agent/nvml_sampler.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include "core/base/file_text.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

// An environment variable set for the scope, then put back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The fake's call counters, through the instance the sampler loaded.
class FakeCalls {
 public:
  FakeCalls() : lib_(dlopen(IX_FAKE_NVML_LIBRARY, RTLD_NOW | RTLD_LOCAL)) {
    void* calls = lib_ ? dlsym(lib_, "ixfake_nvml_calls") : nullptr;
    void* reset = lib_ ? dlsym(lib_, "ixfake_nvml_reset_calls") : nullptr;
    std::memcpy(&calls_, &calls, sizeof calls_);
    std::memcpy(&reset_, &reset, sizeof reset_);
  }
  ~FakeCalls() {
    if (lib_) dlclose(lib_);
  }
  FakeCalls(const FakeCalls&) = delete;
  FakeCalls& operator=(const FakeCalls&) = delete;
  bool ok() const { return calls_ && reset_; }
  unsigned long operator()(const char* name) const { return calls_ ? calls_(name) : 0; }
  void Reset() const {
    if (reset_) reset_();
  }

 private:
  void* lib_;
  unsigned long (*calls_)(const char*) = nullptr;
  void (*reset_)() = nullptr;
};

class NvmlSamplerTest : public ::testing::Test {
 protected:
  // The fake opened with `script` (IX_FAKE_NVML_SCRIPT for the test).
  std::unique_ptr<GpuSource> Open(const std::string& script) {
    EXPECT_TRUE(WriteFileAtomic(script_path_, script).ok());
    return OpenNvml(IX_FAKE_NVML_LIBRARY);
  }
  void SetLoad(const std::string& load) { ASSERT_TRUE(WriteFileAtomic(load_path_, load).ok()); }
  // Opens the fake with `script` and samples it `rounds` times, the call
  // counters reset before each; `check(round, snapshot, calls)` looks at
  // each round (what the sampler asks NVML for, round by round).
  using RoundCheck = std::function<void(int round, const GpuSnapshot& s, const FakeCalls& calls)>;
  void SampleRounds(const std::string& script, int rounds, const RoundCheck& check) {
    const std::unique_ptr<GpuSource> nvml = Open(script);
    const FakeCalls calls;
    ASSERT_TRUE(calls.ok());
    for (int round = 0; round < rounds; ++round) {
      calls.Reset();
      check(round, nvml->Sample(), calls);
    }
  }

  test::TempDir dir_{"ix-nvml-sampler"};
  const std::string script_path_ = dir_.path() + "/script";
  const std::string load_path_ = dir_.path() + "/load";
  ScopedEnv script_env_{"IX_FAKE_NVML_SCRIPT", script_path_};
};

TEST(NvmlLibraryFromEnv, IxNvmlLibraryElseTheDriversName) {
  {
    ScopedEnv env("IX_NVML_LIBRARY", "/opt/fake/libnvidia-ml.so.1");
    EXPECT_EQ(NvmlLibraryFromEnv(), "/opt/fake/libnvidia-ml.so.1");
  }
  {
    ScopedEnv env("IX_NVML_LIBRARY", "");
    EXPECT_EQ(NvmlLibraryFromEnv(), "libnvidia-ml.so.1");
  }
  ScopedEnv env("IX_NVML_LIBRARY", std::nullopt);
  EXPECT_EQ(NvmlLibraryFromEnv(), "libnvidia-ml.so.1");
}

TEST(OpenNvml, AnAbsentLibraryIsAbsentWithOneLine) {
  const std::unique_ptr<GpuSource> nvml = OpenNvml("/nonexistent/libnvidia-ml.so.1");
  for (int i = 0; i < 2; ++i) {
    const GpuSnapshot s = nvml->Sample();
    EXPECT_EQ(s.state, "absent");
    EXPECT_THAT(s.detail, StartsWith("NVML not present: cannot load /nonexistent/libnvidia-ml.so.1: "));
    EXPECT_THAT(s.detail, Not(HasSubstr("\n")));
    EXPECT_THAT(s.gpus, IsEmpty());
  }
}

TEST(OpenNvml, ALibraryWithoutNvmlFailsNamingTheMissingCalls) {
  // The C library loads but has no NVML in it.
  const GpuSnapshot s = OpenNvml("libc.so.6")->Sample();
  EXPECT_EQ(s.state, "failed");
  EXPECT_THAT(s.detail, StartsWith("libc.so.6 lacks nvmlInit_v2"));
}

TEST_F(NvmlSamplerTest, AFailedInitIsFailedWithNvmlsWords) {
  EXPECT_EQ(Open("fail_init\n")->Sample().detail, "nvmlInit_v2 failed: Driver Not Loaded");
  const GpuSnapshot s = Open("gpus 2\nbogus line\n")->Sample();
  EXPECT_EQ(s.state, "failed");
  EXPECT_EQ(s.detail, "nvmlInit_v2 failed: Unknown Error");
}

TEST_F(NvmlSamplerTest, EveryReadingOfEveryGpu) {
  const std::unique_ptr<GpuSource> nvml = Open("gpus 4\n");
  const GpuSnapshot s = nvml->Sample();
  EXPECT_EQ(s.state, "ok");
  EXPECT_EQ(s.version, "NVML 12.999.99, driver 999.99 (fake)");
  EXPECT_EQ(s.detail, "");
  ASSERT_EQ(s.gpus.size(), 4u);
  for (unsigned i = 0; i < 4; ++i) {
    const GpuSample& g = s.gpus[i];
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.uuid, "GPU-fa4e0000-0000-4000-8000-00000000000" + std::to_string(i));
    EXPECT_EQ(g.name, "NVIDIA H200");
    EXPECT_EQ(g.unix_time, s.gpus[0].unix_time);  // one time for the set
    EXPECT_GT(g.unix_time, 1.7e9);
    EXPECT_EQ(g.power_watts, 80.0);  // idle, and the 1 s average (the instant reading ripples)
    ASSERT_TRUE(g.energy_joules.has_value());
    EXPECT_GE(*g.energy_joules, 0.0);
    EXPECT_EQ(g.temperature_celsius, 30u);
    EXPECT_EQ(g.sm_clock_mhz, 345u);
    EXPECT_EQ(g.memory_clock_mhz, 3201u);
    EXPECT_EQ(g.gpu_utilization_percent, 0u);
    EXPECT_EQ(g.memory_utilization_percent, 0u);
    EXPECT_EQ(g.memory_total_bytes, 143771ull << 20);
    EXPECT_EQ(g.memory_used_bytes, 0u);  // as nvidia-smi: the driver's reserved memory left out
    EXPECT_EQ(g.ecc_corrected_errors, 0u);
    EXPECT_EQ(g.ecc_uncorrected_errors, 0u);
    EXPECT_EQ(g.xid_events, 0u);
  }
}

TEST_F(NvmlSamplerTest, WithoutAScriptEightIdleGpus) {
  ScopedEnv none("IX_FAKE_NVML_SCRIPT", std::nullopt);
  const GpuSnapshot s = OpenNvml(IX_FAKE_NVML_LIBRARY)->Sample();
  ASSERT_EQ(s.gpus.size(), 8u);
  EXPECT_EQ(s.gpus[7].power_watts, 80.0);
}

TEST_F(NvmlSamplerTest, OneBatchPerGpuAndSingleCallsOnlyForWhatHasNoFieldId) {
  SampleRounds("gpus 4\n", 2, [](int, const GpuSnapshot& s, const FakeCalls& calls) {
    ASSERT_EQ(s.gpus.size(), 4u);
    EXPECT_EQ(calls("nvmlDeviceGetFieldValues"), 4u);
    EXPECT_EQ(calls("nvmlDeviceGetPowerUsage"), 0u);
    EXPECT_EQ(calls("nvmlDeviceGetTotalEnergyConsumption"), 0u);
    EXPECT_EQ(calls("nvmlDeviceGetTotalEccErrors"), 0u);
    EXPECT_EQ(calls("nvmlDeviceGetTemperature"), 4u);
    EXPECT_EQ(calls("nvmlDeviceGetClockInfo"), 8u);
    EXPECT_EQ(calls("nvmlDeviceGetUtilizationRates"), 4u);
    EXPECT_EQ(calls("nvmlDeviceGetMemoryInfo_v2"), 4u);
    EXPECT_EQ(calls("nvmlDeviceGetMemoryInfo"), 0u);
    EXPECT_EQ(calls("nvmlEventSetWait_v2"), 1u);  // nothing waiting: one look
    // Opened once: no names, UUIDs or handles again.
    EXPECT_EQ(calls("nvmlDeviceGetUUID"), 0u);
    EXPECT_EQ(calls("nvmlDeviceGetHandleByIndex_v2"), 0u);
    EXPECT_EQ(calls("nvmlInit_v2"), 0u);
  });
}

TEST_F(NvmlSamplerTest, WithoutFieldValuesTheSingleCallsServeAndTheBatchIsNotAskedAgain) {
  SampleRounds("gpus 2\nfield_values off\n", 2, [](int round, const GpuSnapshot& s, const FakeCalls& calls) {
    ASSERT_EQ(s.gpus.size(), 2u);
    EXPECT_EQ(s.detail, "");
    for (const GpuSample& g : s.gpus) {
      EXPECT_EQ(g.power_watts, 80.0);
      EXPECT_TRUE(g.energy_joules.has_value());
      EXPECT_EQ(g.ecc_corrected_errors, 0u);
      EXPECT_EQ(g.ecc_uncorrected_errors, 0u);
      EXPECT_EQ(g.temperature_celsius, 30u);
    }
    EXPECT_EQ(calls("nvmlDeviceGetFieldValues"), round == 0 ? 2u : 0u);
    EXPECT_EQ(calls("nvmlDeviceGetPowerUsage"), 2u);
    // The energy counter (slow on real drivers) is read every 10 s; the
    // second round reports the first round's reading.
    EXPECT_EQ(calls("nvmlDeviceGetTotalEnergyConsumption"), round == 0 ? 2u : 0u);
    EXPECT_EQ(calls("nvmlDeviceGetTotalEccErrors"), 4u);
  });
}

TEST_F(NvmlSamplerTest, TheEnergyCounterIsLeftOutOfTheBatchUntilItIsDue) {
  const std::unique_ptr<GpuSource> nvml = Open("gpus 1\n");
  const FakeCalls calls;
  ASSERT_TRUE(calls.ok());
  const GpuSnapshot first = nvml->Sample();
  const GpuSnapshot second = nvml->Sample();
  ASSERT_EQ(second.gpus.size(), 1u);
  EXPECT_EQ(second.gpus[0].energy_joules, first.gpus[0].energy_joules);  // within 10 s: the last reading
  EXPECT_EQ(calls("nvmlDeviceGetTotalEnergyConsumption"), 0u);           // never singly while the batch serves
}

TEST_F(NvmlSamplerTest, WhatAGpuDoesNotSupportIsUnsetAndNotAskedAgain) {
  SampleRounds("gpus 1\necc off\n", 2, [](int round, const GpuSnapshot& s, const FakeCalls& calls) {
    ASSERT_EQ(s.gpus.size(), 1u);
    EXPECT_EQ(s.detail, "");  // not supported is no problem
    EXPECT_FALSE(s.gpus[0].ecc_corrected_errors.has_value());
    EXPECT_FALSE(s.gpus[0].ecc_uncorrected_errors.has_value());
    EXPECT_EQ(s.gpus[0].power_watts, 80.0);
    EXPECT_EQ(calls("nvmlDeviceGetFieldValues"), 1u);
    EXPECT_EQ(calls("nvmlDeviceGetTotalEccErrors"), round == 0 ? 2u : 0u);
  });
}

TEST_F(NvmlSamplerTest, WithoutMemoryInfoV2TheUsedMemoryCountsTheReserved) {
  SampleRounds("gpus 1\nnot_supported nvmlDeviceGetMemoryInfo_v2\n", 2, [](int round, const GpuSnapshot& s, const FakeCalls& calls) {
    ASSERT_EQ(s.gpus.size(), 1u);
    EXPECT_EQ(s.gpus[0].memory_used_bytes, 512ull << 20);
    EXPECT_EQ(s.gpus[0].memory_total_bytes, 143771ull << 20);
    EXPECT_EQ(calls("nvmlDeviceGetMemoryInfo_v2"), round == 0 ? 1u : 0u);
    EXPECT_EQ(calls("nvmlDeviceGetMemoryInfo"), 1u);
  });
}

TEST_F(NvmlSamplerTest, WithoutTheOneSecondAverageThePowerIsTheInstantReading) {
  SampleRounds("gpus 1\nunsupported 185\n", 1, [](int, const GpuSnapshot& s, const FakeCalls& calls) {
    ASSERT_EQ(s.gpus.size(), 1u);
    ASSERT_TRUE(s.gpus[0].power_watts.has_value());
    EXPECT_NEAR(*s.gpus[0].power_watts, 80.0, 1.5 + 1e-9);  // the fake's instant ripple
    EXPECT_EQ(calls("nvmlDeviceGetPowerUsage"), 0u);
  });
}

TEST_F(NvmlSamplerTest, TheLoadFileRaisesPowerClocksAndUtilisation) {
  const std::unique_ptr<GpuSource> nvml = Open("gpus 2\nidle_watts 100\nbusy_watts 700\nload_file " + load_path_ + "\n");
  EXPECT_EQ(nvml->Sample().gpus[1].power_watts, 100.0);  // no file yet: idle
  SetLoad("1\n");
  GpuSample busy = nvml->Sample().gpus[1];
  EXPECT_EQ(busy.power_watts, 700.0);
  EXPECT_EQ(busy.gpu_utilization_percent, 100u);
  EXPECT_EQ(busy.temperature_celsius, 75u);
  EXPECT_EQ(busy.sm_clock_mhz, 1980u);
  EXPECT_EQ(busy.memory_used_bytes, static_cast<uint64_t>(0.9 * (143771ull << 20)));
  SetLoad("0.5");
  busy = nvml->Sample().gpus[1];
  EXPECT_EQ(busy.power_watts, 400.0);
  EXPECT_EQ(busy.gpu_utilization_percent, 50u);
}

TEST_F(NvmlSamplerTest, EnergyNeverGoesBackAndGrowsUnderLoad) {
  const std::unique_ptr<GpuSource> nvml = Open("gpus 1\nload_file " + load_path_ + "\n");
  SetLoad("1");
  double last = -1;
  for (int i = 0; i < 5; ++i) {
    const std::optional<double> e = nvml->Sample().gpus[0].energy_joules;
    ASSERT_TRUE(e.has_value());
    EXPECT_GE(*e, last);
    last = *e;
  }
  const double before = last;
  EXPECT_TRUE(test::WaitUntil([&] { return *nvml->Sample().gpus[0].energy_joules > before; },
                              std::chrono::seconds(10)));
}

TEST_F(NvmlSamplerTest, CriticalXidEventsAreCountedPerGpu) {
  const std::unique_ptr<GpuSource> nvml = Open("gpus 4\nxid 1 0 79\nxid 1 0 48\nxid 3 0 13\nxid 2 3600 31\n");
  for (int round = 0; round < 2; ++round) {  // counted once, kept
    const GpuSnapshot s = nvml->Sample();
    ASSERT_EQ(s.gpus.size(), 4u);
    EXPECT_EQ(s.gpus[0].xid_events, 0u);
    EXPECT_EQ(s.gpus[1].xid_events, 2u);
    EXPECT_EQ(s.gpus[2].xid_events, 0u);  // not yet (an hour from now)
    EXPECT_EQ(s.gpus[3].xid_events, 1u);
  }
}

TEST_F(NvmlSamplerTest, WithoutEventsXidIsUnsetAndTheRestIsRead) {
  const GpuSnapshot s = Open("gpus 2\nevents off\nxid 0 0 79\n")->Sample();
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.state, "ok");
  EXPECT_FALSE(s.gpus[0].xid_events.has_value());
  EXPECT_EQ(s.gpus[0].power_watts, 80.0);
}

TEST_F(NvmlSamplerTest, ALostGpuHasNoReadingsAndOneLineInTheDetail) {
  const GpuSnapshot s = Open("gpus 3\nlost 1\n")->Sample();
  EXPECT_EQ(s.state, "ok");
  ASSERT_EQ(s.gpus.size(), 3u);
  EXPECT_EQ(s.gpus[0].power_watts, 80.0);
  EXPECT_EQ(s.gpus[2].temperature_celsius, 30u);
  const GpuSample& lost = s.gpus[1];
  EXPECT_EQ(lost.index, 1u);
  EXPECT_EQ(lost.uuid, "");  // lost before it was opened: no UUID either
  EXPECT_FALSE(lost.power_watts || lost.energy_joules || lost.temperature_celsius || lost.sm_clock_mhz ||
               lost.memory_clock_mhz || lost.gpu_utilization_percent || lost.memory_used_bytes ||
               lost.ecc_corrected_errors || lost.ecc_uncorrected_errors);
  // The batch, then the nine single calls (both clocks, both ECC counts).
  EXPECT_EQ(s.detail, "GPU 1: nvmlDeviceGetFieldValues failed: GPU is lost (and 9 more calls)");
}

TEST_F(NvmlSamplerTest, NoGpusIsOkAndEmpty) {
  const GpuSnapshot s = Open("gpus 0\n")->Sample();
  EXPECT_EQ(s.state, "ok");
  EXPECT_THAT(s.gpus, IsEmpty());
}

}  // namespace
}  // namespace ix
