// libFuzzer target for the small texts a step reads from the kernel and
// from Slurm's environment (core/node/topology.h, core/node/ports.h): id lists
// (cpulist, Cpus_allowed_list, SLURM_STEP_GPUS: ParseIdList), a node's
// meminfo (ParseNodeMeminfo), PCI bus ids (NormalizeBusId, as NVML and
// sysfs write them), port ranges and SLURM_STEP_RESV_PORTS (ParsePortRange,
// ParsePortList). Every parser gets the whole input. Errors are expected;
// crashes, leaks, UB, hangs, and these are bugs: an id list that does not
// come back from its own formatting; a bus id that normalises to something
// that normalises differently; a port outside 1-65535, a list over its cap.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/node/ports.h"
#include "core/node/topology.h"
#include "fuzz/fuzz_util.h"

namespace {

void CheckIdList(std::string_view text) {
  ix::Result<std::vector<int>> ids = ix::ParseIdList(text, "cpulist");
  if (!ids) return;
  const std::string formatted = ix::FormatIdList(ids.value());
  ix::Result<std::vector<int>> back = ix::ParseIdList(formatted, "formatted");
  if (!back) ixfuzz::Fail("a formatted id list does not parse: " + formatted);
  ixfuzz::Check(back.value() == ids.value(), "an id list changed through its formatting: " + formatted);
  for (int id : ids.value()) ixfuzz::Check(id >= 0, "a negative id in " + formatted);
}

void CheckBusId(std::string_view text) {
  ix::Result<std::string> id = ix::NormalizeBusId(text);
  if (!id) return;
  ix::Result<std::string> again = ix::NormalizeBusId(id.value());
  ixfuzz::Check(again && again.value() == id.value(), "a normalised bus id normalises differently: " + id.value());
}

void CheckPorts(std::string_view text) {
  if (ix::Result<ix::PortRange> r = ix::ParsePortRange(text); r) {
    ixfuzz::Check(r.value().lo >= 1 && r.value().lo <= r.value().hi && r.value().hi <= 65535,
                  "a bad port range was accepted: " + r.value().ToString());
  }
  for (size_t cap : {size_t{1024}, size_t{3}}) {
    ix::Result<std::vector<int>> ports = ix::ParsePortList(text, cap);
    if (!ports) continue;
    ixfuzz::Check(ports.value().size() <= cap, "a port list over its cap");
    for (int p : ports.value()) ixfuzz::Check(p >= 1 && p <= 65535, "port " + std::to_string(p) + " in a list");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = ixfuzz::AsText(data, size);
  CheckIdList(text);
  CheckBusId(text);
  CheckPorts(text);
  (void)ix::ParseNodeMeminfo(text, "node0/meminfo");
  return 0;
}
