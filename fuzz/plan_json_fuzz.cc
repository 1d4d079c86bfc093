// libFuzzer target for plan.json (core/recipe/launch_plan.h PlanFromJson): the
// launch plan the plugin writes and ix-stepd reads in the job's container.
// A plan that loads must be written back (PlanToJson, compact and pretty)
// to JSON that loads again and writes the same bytes. Errors are expected;
// crashes, leaks, UB, hangs and a broken round trip are bugs.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/recipe/launch_plan.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ix::Result<ix::LaunchPlan> plan = ix::PlanFromJson(std::string(ixfuzz::AsText(data, size)), "fuzz.json");
  if (!plan) return 0;
  const std::string json = ix::PlanToJson(plan.value(), false);
  for (bool pretty : {false, true}) {
    const std::string text = pretty ? ix::PlanToJson(plan.value(), true) : json;
    ix::Result<ix::LaunchPlan> back = ix::PlanFromJson(text, "round trip");
    if (!back) ixfuzz::Fail("a plan that loaded does not read back: " + back.error().message + "\n" + text);
    ixfuzz::Check(ix::PlanToJson(back.value(), false) == json, "a plan changed on its way through JSON\n" + json);
  }
  (void)ix::PlanSummary(plan.value());
  return 0;
}
