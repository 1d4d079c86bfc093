// The `hang:` section of a recipe. The names its URL templates use are
// checked per arm with the arm's other templates (recipe_check.cc).
#include "core/recipe/recipe_hang.h"

#include <algorithm>
#include <set>

#include "core/recipe/recipe_kv_offload.h"

namespace ix {
namespace {


bool NameChars(const std::string& s, bool colon) {
  const auto first = [&](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':'); };
  return !s.empty() && first(s[0]) &&
         std::all_of(s.begin(), s.end(), [&](char c) { return first(c) || (c >= '0' && c <= '9'); });
}

// A non-empty list of distinct Prometheus metric names, or none at all
// when the key is absent and `required` is false.
std::vector<std::string> MetricList(const YamlReader& r, uint32_t server, const std::string& field, const char* key,
                                    bool required) {
  const std::string f = Child(field, key);
  const uint32_t list = required ? r.Required(server, field, key) : r.Find(server, key);
  if (list == YamlReader::kNone) return {};
  std::vector<std::string> out;
  ForEachYamlItem(r, list, f, [&](size_t, uint32_t item, const std::string& item_field) {
    const std::string& name = r.String(item, item_field);
    if (!IsPrometheusMetricName(name)) {
      r.Fail(item, item_field, "'" + name + "' is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)");
    }
    if (std::find(out.begin(), out.end(), name) != out.end()) r.Fail(item, item_field, "'" + name + "' given twice");
    out.push_back(name);
  });
  if (out.empty()) r.Fail(list, f, "give at least one metric name");
  return out;
}

// One server's entry. `process` is the recipe's process of that name, whose
// HTTP readiness URL gives a `metrics:` path its origin.
HangServerTemplate LoadServer(const YamlReader& r, uint32_t node, const std::string& field,
                              const ProcessTemplate& process, bool progress_required) {
  r.CheckKeys(node, field, {"metrics", "metrics_url", "busy", "progress", "per_label"});
  const uint32_t path = r.Find(node, "metrics");
  const uint32_t url = r.Find(node, "metrics_url");
  if ((path == YamlReader::kNone) == (url == YamlReader::kNone)) {
    r.Fail(node, field, "give exactly one of metrics (a path on the " + process.name +
                            "'s API origin) and metrics_url (a full URL)");
  }
  HangServerTemplate s;
  s.on_origin = path != YamlReader::kNone;
  if (s.on_origin) {
    s.metrics = LoadTemplate(r, path, Child(field, "metrics"));
    if (s.metrics.tmpl.source().empty() || s.metrics.tmpl.source()[0] != '/') {
      r.Fail(path, Child(field, "metrics"), "a path on the API origin starts with '/' (e.g. /metrics)");
    }
    const bool http = std::any_of(process.readiness.begin(), process.readiness.end(), [](const ReadinessTemplate& t) {
      return t.kind == ReadinessTemplate::Kind::kHttpOk || t.kind == ReadinessTemplate::Kind::kModelsNonEmpty;
    });
    if (!http) {
      r.Fail(path, Child(field, "metrics"), "the " + process.name + " has no http_ok or models_nonempty readiness URL "
                                                "to take the origin from; give metrics_url");
    }
  } else {
    s.metrics = LoadTemplate(r, url, Child(field, "metrics_url"));
    const std::string& src = s.metrics.tmpl.source();
    if (src.rfind("http://", 0) != 0 && src.rfind("https://", 0) != 0) {
      r.Fail(url, Child(field, "metrics_url"), "must be an http:// or https:// URL");
    }
  }
  s.busy = MetricList(r, node, field, "busy", true);
  s.progress = MetricList(r, node, field, "progress", progress_required);
  if (const uint32_t l = r.Find(node, "per_label"); l != YamlReader::kNone) {
    s.per_label = r.String(l, Child(field, "per_label"));
    if (!IsPrometheusLabelName(s.per_label)) {
      r.Fail(l, Child(field, "per_label"), "'" + s.per_label + "' is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)");
    }
  }
  return s;
}

}  // namespace

bool IsPrometheusMetricName(const std::string& s) { return NameChars(s, true); }
bool IsPrometheusLabelName(const std::string& s) { return NameChars(s, false); }

HangPolicy LoadHang(const YamlReader& r, uint32_t map, const Recipe& recipe) {
  const std::string field = "hang";
  r.RequireMap(map, field);
  r.CheckKeys(map, field, {"after", "engine", "router"});
  HangPolicy h;
  h.where = r.Where(map);
  const uint32_t after = r.Required(map, field, "after");
  h.after_s = r.PositiveInt(after, Child(field, "after"));
  if (h.after_s > HangPolicy::kMaxHangAfterS) {
    r.Fail(after, Child(field, "after"), "seconds from 1 to " + std::to_string(HangPolicy::kMaxHangAfterS));
  }
  const uint32_t engine = r.Find(map, "engine");
  const uint32_t router = r.Find(map, "router");
  if (engine == YamlReader::kNone && router == YamlReader::kNone) r.Fail(map, field, "give engine, router or both");
  if (engine != YamlReader::kNone) h.engine = LoadServer(r, engine, Child(field, "engine"), recipe.engine, true);
  if (router != YamlReader::kNone) {
    if (!recipe.router) r.Fail(router, Child(field, "router"), "the recipe has no 'router' section");
    // Without counters of its own the router progresses when the engines do,
    // so one of the two must say what progress is.
    h.router = LoadServer(r, router, Child(field, "router"), *recipe.router, false);
    if (!h.engine && h.router->progress.empty()) {
      r.Fail(router, Child(field, "router"), "give the router progress counters of its own, or an engine entry whose progress it waits on");
    }
  }
  return h;
}

}  // namespace ix
