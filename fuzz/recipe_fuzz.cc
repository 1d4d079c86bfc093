// libFuzzer target for the recipe loader and the template engine behind
// it: arbitrary bytes as a recipe YAML (core/recipe/recipe.h LoadRecipeString).
// When a recipe loads, every arm (at most 8) is rendered with placeholder
// ports (PortNames, PlaceholderPorts, RenderDryRun) at a few concurrencies,
// eval-only or not, and with GPU places so engine.numa_flags render too;
// each plan must then read back from its own JSON (PlanFromJson) and write
// the same JSON again. Errors are expected; crashes, leaks, UB, hangs, a
// loaded recipe whose plan does not read back, and a plan that does not
// round-trip are bugs.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/recipe/launch_plan.h"
#include "core/recipe/recipe.h"
#include "fuzz/fuzz_util.h"

namespace {

// The plan's JSON must read back to a plan that writes the same JSON.
void CheckRoundTrip(const ix::LaunchPlan& plan) {
  const std::string json = ix::PlanToJson(plan, false);
  ix::Result<ix::LaunchPlan> back = ix::PlanFromJson(json, "rendered plan");
  if (!back) ixfuzz::Fail("a rendered plan does not read back: " + back.error().message + "\n" + json);
  ixfuzz::Check(ix::PlanToJson(back.value(), false) == json, "a rendered plan changed on its way through JSON");
}

void RenderArm(const ix::Recipe& recipe, const ix::Arm& arm, int64_t conc, bool eval_only) {
  ix::RenderRequest req;
  req.arm = arm.name;
  req.conc = conc;
  req.eval_only = eval_only;
  if (ix::Result<ix::LaunchPlan> plan = ix::RenderDryRun(recipe, req); plan) CheckRoundTrip(plan.value());
  // RenderPlan with the placeholder ports and a GPU place per GPU: the
  // per_gpu items of engine.numa_flags render only with places.
  ix::Result<std::vector<std::string>> names = ix::PortNames(recipe, arm.name);
  if (!names) return;
  req.ports = ix::PlaceholderPorts(names.value());
  const int64_t gpus = std::clamp<int64_t>(arm.gpus, 0, 64);
  for (int64_t g = 0; g < gpus; ++g) req.gpu_places.push_back({static_cast<int>(g % 2), g % 2 ? "8-15" : "0-7"});
  if (ix::Result<ix::LaunchPlan> plan = ix::RenderPlan(recipe, req); plan) CheckRoundTrip(plan.value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(ixfuzz::AsText(data, size));
  ix::Result<ix::Recipe> recipe = ix::LoadRecipeString(text, "fuzz.yaml");
  if (!recipe) return 0;
  const ix::Recipe& r = recipe.value();
  // A few concurrencies that exercise the capture rule's divisibility and
  // caps; which ones depends on the input, so the fuzzer can vary them.
  const int64_t concs[] = {1, 4, 7, 64, 1000000};
  const int64_t extra = 1 + static_cast<int64_t>(size % 4096);
  size_t arms = 0;
  for (const ix::Arm& arm : r.arms) {
    if (++arms > 8) break;
    for (int64_t conc : concs) RenderArm(r, arm, conc, conc == 7);
    RenderArm(r, arm, extra, true);
  }
  return 0;
}
