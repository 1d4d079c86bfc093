// libFuzzer target for the values of the srun options --inferencex-conc,
// --inferencex-ready-timeout and --inferencex-placement (spank_plugin/
// step_options.h ParseConcurrency, ParseReadyTimeout; core/node/placement.h
// ParsePlacementPolicy), then the whole srun-side check of a set of options
// (ValidateStepOptions: recipe and arm names looked up in the checkout's
// recipes/, the concurrency rendered). The input is up to six lines: conc,
// ready-timeout, placement, arm, recipe, and "1" for --inferencex-eval-only.
// Errors are expected; crashes, leaks, UB, hangs, and a parsed number that
// is out of range or not exactly the decimal digits given, are bugs.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/node/placement.h"
#include "fuzz/fuzz_util.h"
#include "spank_plugin/step_options.h"

#ifndef IX_FUZZ_RECIPE_DIR
#error "IX_FUZZ_RECIPE_DIR: the recipes the options are checked against"
#endif

namespace {

// An accepted value is a plain decimal number in [1, max]: no sign, no
// spaces, nothing after it.
void CheckNumber(const ix::Result<int64_t>& r, const std::string& text, int64_t max, const char* option) {
  if (!r) {
    ixfuzz::Check(r.error().message.find(option) != std::string::npos, "the error does not name the option");
    return;
  }
  ixfuzz::Check(r.value() >= 1 && r.value() <= max, std::string(option) + " accepted a value out of range");
  ixfuzz::Check(!text.empty() && text.find_first_not_of("0123456789") == std::string::npos,
                std::string(option) + " accepted '" + text + "', which is not a decimal number");
  std::string digits = text.substr(std::min(text.find_first_not_of('0'), text.size()));
  ixfuzz::Check(digits == std::to_string(r.value()), std::string(option) + " read '" + text + "' as another number");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> f = ixfuzz::Split(ixfuzz::AsText(data, size), '\n', 6);
  auto field = [&](size_t i) { return i < f.size() ? f[i] : std::string(); };
  ix::StepOptions o;
  ix::Result<int64_t> conc = ix::ParseConcurrency(field(0));
  CheckNumber(conc, field(0), ix::kMaxConcurrency, "--inferencex-conc");
  ix::Result<int64_t> timeout = ix::ParseReadyTimeout(field(1));
  CheckNumber(timeout, field(1), ix::kMaxReadyTimeoutS, "--inferencex-ready-timeout");
  if (conc) o.conc = conc.value();
  if (timeout) o.ready_timeout_s = timeout.value();
  if (ix::Result<ix::PlacementPolicy> p = ix::ParsePlacementPolicy(field(2)); p) {
    ixfuzz::Check(field(2) == ix::PlacementPolicyName(p.value()), "a placement policy does not name itself");
  }
  if (f.size() > 2) o.placement = field(2);
  if (f.size() > 3) o.arm = field(3);
  if (f.size() > 4) o.recipe = field(4);
  o.eval_only = field(5) == "1";
  ix::Status s = ix::ValidateStepOptions(o, IX_FUZZ_RECIPE_DIR);
  if (!o.Active()) ixfuzz::Check(s.ok(), "options that are not active were refused");
  return 0;
}
