#include "core/recipe/launch_plan_hang.h"

#include <cmath>
#include <cstdio>

namespace ix {
namespace {

std::string Seconds(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// The hang_after the request asks for: nullopt = off.
Result<std::optional<double>> AfterS(const Recipe& recipe, const RenderRequest& req, const std::string& what) {
  if (!req.hang_after_s) {
    if (!recipe.hang) return std::optional<double>{};
    return std::optional<double>{static_cast<double>(recipe.hang->after_s)};
  }
  const double v = *req.hang_after_s;
  if (!std::isfinite(v) || v < 0 || v > HangPolicy::kMaxHangAfterS) {
    return Error{what + ": hang_after " + Seconds(v) + " is outside 1.." +
                 std::to_string(HangPolicy::kMaxHangAfterS) + " seconds (0: off)"};
  }
  if (v == 0) return std::optional<double>{};
  if (!recipe.hang) {
    return Error{what + ": a hang_after of " + Seconds(v) + " s was given but recipe " + recipe.name +
                 " has no 'hang:' section saying what progress is (docs/RECIPES.md); leave it out or turn it off"};
  }
  return std::optional<double>{v};
}

// The check of `p` under `server`, or nullopt where there is nothing to read.
Result<std::optional<HangCheck>> Check(const HangServerTemplate& server, const PlannedProcess& p, const Lookup& lookup) {
  Result<std::string> rendered = server.metrics.tmpl.Render(lookup);
  if (!rendered) return Error{server.metrics.ref.Describe() + ": " + rendered.error().message};
  HangCheck c{p.name, rendered.value(), server.busy, server.progress, server.per_label};
  if (server.on_origin) {
    std::string origin;
    for (const ReadinessCheck& r : p.readiness) {
      if (r.kind != ReadinessTemplate::Kind::kHttpOk && r.kind != ReadinessTemplate::Kind::kModelsNonEmpty) continue;
      origin = UrlOrigin(r.url);
      break;
    }
    if (origin.empty()) return std::optional<HangCheck>{};
    c.metrics_url = origin + c.metrics_url;
  }
  return std::optional<HangCheck>{std::move(c)};
}

}  // namespace

std::string UrlOrigin(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  return url.substr(0, url.find('/', scheme + 3));
}

Status ApplyHang(const Recipe& recipe, const RenderRequest& req, const Lookup& lookup, const std::string& what,
                 LaunchPlan& plan) {
  Result<std::optional<double>> after = AfterS(recipe, req, what);
  if (!after) return after.error();
  if (!after.value()) return Ok{};
  PlannedHang hang;
  hang.after_s = *after.value();
  for (const PlannedProcess& p : plan.processes) {
    if (p.role == PlannedProcess::kServerRole) continue;  // a KV offload tier's: no progress defined
    const bool router = recipe.router && p.name == recipe.router->name;
    const std::optional<HangServerTemplate>& server = router ? recipe.hang->router : recipe.hang->engine;
    if (!server) continue;
    Result<std::optional<HangCheck>> c = Check(*server, p, lookup);
    if (!c) return c.error();
    if (c.value()) hang.checks.push_back(std::move(*c.value()));
  }
  plan.hang = std::move(hang);
  return Ok{};
}

}  // namespace ix
