#include "aiperf_server_metrics.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "aiperf_export.h"
#include "fake_common.h"

namespace ixfake::aiperf {
namespace {

using Stats = std::vector<std::pair<std::string, double>>;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "name{a="x",b="y"} 1.5 [ts]" into name, labels, value; false if malformed.
bool parse_sample(const std::string& line, std::string& name, std::vector<std::pair<std::string, std::string>>& labels,
                  double& value) {
  std::size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ' && line[i] != '\t') ++i;
  name = line.substr(0, i);
  if (name.empty()) return false;
  if (i < line.size() && line[i] == '{') {
    ++i;
    for (;;) {
      while (i < line.size() && (line[i] == ',' || line[i] == ' ')) ++i;
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      std::size_t eq = line.find('=', i);
      if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') return false;
      std::string key = line.substr(i, eq - i);
      std::string val;
      std::size_t j = eq + 2;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size()) {
          ++j;
          val += line[j] == 'n' ? '\n' : line[j];
        } else {
          val += line[j];
        }
      }
      if (j >= line.size()) return false;
      labels.emplace_back(std::move(key), std::move(val));
      i = j + 1;
    }
  }
  std::istringstream rest(line.substr(i));
  std::string number;
  if (!(rest >> number)) return false;
  char* end = nullptr;
  value = std::strtod(number.c_str(), &end);
  return end == number.c_str() + number.size();
}

std::string label_key(const std::vector<std::pair<std::string, std::string>>& labels) {
  std::string key;
  for (const auto& [k, v] : labels) key += k + "=" + v + "\x1f";
  return key;
}

// The series of one endpoint over its scrapes, reduced to what the
// artifacts show.
struct SeriesReport {
  std::string url;
  std::vector<std::pair<std::string, std::string>> labels;
  Stats stats;
  std::vector<std::pair<std::pair<std::int64_t, std::int64_t>, Stats>> timeslices;
  std::vector<std::pair<std::string, double>> buckets;  // deltas over profiling
};

// One family across endpoints: its type and help from the first endpoint
// that has it, and every endpoint's series of it.
struct FamilyReport {
  std::string type;
  std::string help;
  std::vector<SeriesReport> series;
};

double seconds(std::int64_t a, std::int64_t b) { return static_cast<double>(b - a) / 1e9; }

void add_distribution(Stats& out, const std::vector<double>& values) {
  auto s = metric_stats(values);
  if (!s) return;
  out.insert(out.end(), {{"avg", s->avg}, {"min", s->min}, {"max", s->max}, {"std", s->std}});
  for (const auto& [p, v] : s->percentiles) out.emplace_back(strprintf("p%d", p), v);
}

// Estimated percentile from cumulative bucket deltas (linear within a bucket).
std::optional<double> bucket_percentile(const std::vector<std::pair<std::string, double>>& buckets, double p) {
  if (buckets.empty() || buckets.back().second <= 0) return std::nullopt;
  const double target = buckets.back().second * p / 100.0;
  double lower = 0, below = 0;
  for (const auto& [le, cum] : buckets) {
    const double upper = le == "+Inf" ? lower : std::strtod(le.c_str(), nullptr);
    if (cum >= target) {
      if (le == "+Inf" || cum <= below) return upper;
      return lower + (upper - lower) * (target - below) / (cum - below);
    }
    lower = upper;
    below = cum;
  }
  return lower;
}

SeriesReport report(const std::string& url, const std::string& type,
                    const std::vector<std::pair<std::int64_t, const SeriesValue*>>& points) {
  SeriesReport r;
  r.url = url;
  r.labels = points.front().second->labels;
  const std::int64_t t0 = points.front().first;
  const std::int64_t t1 = points.back().first;
  const double span = seconds(t0, t1);
  if (type == "counter") {
    const double total = std::max(0.0, points.back().second->value - points.front().second->value);
    std::vector<double> rates;
    for (std::size_t i = 1; i < points.size(); ++i) {
      const double d = std::max(0.0, points[i].second->value - points[i - 1].second->value);
      const double dt = seconds(points[i - 1].first, points[i].first);
      const double rate = dt > 0 ? d / dt : 0;
      rates.push_back(rate);
      r.timeslices.push_back({{points[i - 1].first, points[i].first}, {{"total", d}, {"rate", rate}}});
    }
    r.stats = {{"total", total}, {"rate", span > 0 ? total / span : 0}};
    if (auto s = metric_stats(rates)) {
      r.stats.insert(r.stats.end(), {{"rate_avg", s->avg}, {"rate_min", s->min}, {"rate_max", s->max}, {"rate_std", s->std}});
    }
  } else if (type == "histogram" || type == "summary") {
    const SeriesValue& a = *points.front().second;
    const SeriesValue& b = *points.back().second;
    const double count = std::max(0.0, b.count - a.count);
    const double sum = count > 0 ? b.sum - a.sum : 0;
    r.stats = {{"count", count}, {"count_rate", span > 0 ? count / span : 0},
               {"sum", sum},     {"sum_rate", span > 0 ? sum / span : 0}};
    if (count > 0) r.stats.emplace_back("avg", sum / count);
    for (const auto& [le, cum] : b.buckets) {
      double before = 0;
      for (const auto& [le0, cum0] : a.buckets) before = le0 == le ? cum0 : before;
      r.buckets.emplace_back(le, std::max(0.0, cum - before));
    }
    for (int p : {50, 90, 95, 99}) {
      if (auto v = bucket_percentile(r.buckets, p)) r.stats.emplace_back(strprintf("p%d_estimate", p), *v);
    }
    for (std::size_t i = 1; i < points.size(); ++i) {
      const double c = std::max(0.0, points[i].second->count - points[i - 1].second->count);
      const double s = c > 0 ? points[i].second->sum - points[i - 1].second->sum : 0;
      Stats slice = {{"count", c}, {"sum", s}};
      if (c > 0) slice.emplace_back("avg", s / c);
      r.timeslices.push_back({{points[i - 1].first, points[i].first}, slice});
    }
  } else {  // gauge, info, unknown: the distribution of the sampled values
    std::vector<double> values;
    for (const auto& p : points) values.push_back(p.second->value);
    add_distribution(r.stats, values);
    for (std::size_t i = 1; i < points.size(); ++i) {
      const double v = points[i].second->value;
      r.timeslices.push_back({{points[i - 1].first, points[i].first}, {{"avg", v}, {"min", v}, {"max", v}}});
    }
  }
  return r;
}

const char* unit_of(const std::string& name) {
  if (ends_with(name, "_perc") || ends_with(name, "_ratio")) return "ratio";
  if (ends_with(name, "_seconds")) return "seconds";
  if (ends_with(name, "_bytes")) return "bytes";
  if (name.find("tokens") != std::string::npos) return "tokens";
  if (name.find("requests") != std::string::npos) return "requests";
  return nullptr;
}

void write_stats(rapidjson::Writer<rapidjson::StringBuffer>& w, const Stats& stats) {
  w.StartObject();
  for (const auto& [k, v] : stats) {
    w.Key(k.c_str());
    w.Double(v);
  }
  w.EndObject();
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

Scrape parse_prometheus(const std::string& text) {
  std::map<std::string, std::pair<std::string, std::string>> declared;  // name -> {type, help}
  Scrape out;
  std::istringstream in(text);
  auto family_of = [&](const std::string& sample, std::string& role) -> std::string {
    role.clear();
    if (declared.count(sample) != 0) return sample;
    for (const char* suffix : {"_total", "_created", "_bucket", "_sum", "_count", "_info"}) {
      if (ends_with(sample, suffix)) {
        std::string base = sample.substr(0, sample.size() - std::char_traits<char>::length(suffix));
        if (declared.count(base) != 0) {
          role = suffix;
          return base;
        }
      }
    }
    return {};
  };
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line.substr(1));
      std::string kind, name, rest;
      words >> kind >> name;
      std::getline(words, rest);
      if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      if (kind == "TYPE") declared[name].first = rest;
      if (kind == "HELP") declared[name].second = rest;
      continue;
    }
    std::string name;
    std::vector<std::pair<std::string, std::string>> labels;
    double value = 0;
    if (!parse_sample(line, name, labels, value)) continue;
    std::string role;
    std::string declared_name = family_of(name, role);
    std::string type = declared_name.empty() ? "unknown" : declared[declared_name].first;
    if (type == "untyped" || type.empty()) type = "unknown";
    std::string family = declared_name.empty() ? name : declared_name;
    if (type == "counter" && ends_with(family, "_total")) family.resize(family.size() - 6);
    if (role == "_created") continue;
    std::string le;
    if (type == "histogram" && role == "_bucket") {
      for (auto it = labels.begin(); it != labels.end(); ++it) {
        if (it->first == "le") {
          le = it->second;
          labels.erase(it);
          break;
        }
      }
    }
    if (type == "summary" && role.empty()) continue;  // quantiles: not exported
    std::sort(labels.begin(), labels.end());
    FamilyValues& f = out[family];
    f.type = type;
    if (!declared_name.empty()) f.help = declared[declared_name].second;
    SeriesValue& s = f.series[label_key(labels)];
    s.labels = labels;
    if (role == "_bucket") {
      s.buckets.emplace_back(le, value);
    } else if (role == "_sum" && (type == "histogram" || type == "summary")) {
      s.sum = value;
    } else if (role == "_count" && (type == "histogram" || type == "summary")) {
      s.count = value;
    } else {
      s.value = value;
    }
  }
  return out;
}

ServerMetrics::ServerMetrics(std::vector<std::string> urls) : urls_(std::move(urls)) {
  for (const std::string& u : urls_) endpoints_.push_back(Endpoint{u, 0, 0, {}});
}

void ServerMetrics::add(std::size_t index, std::int64_t unix_ns, std::optional<Scrape> scrape) {
  Endpoint& e = endpoints_.at(index);
  ++e.fetches;
  if (!scrape) {
    ++e.failed;
    return;
  }
  e.scrapes.emplace_back(unix_ns, std::move(*scrape));
}

namespace {

std::map<std::string, FamilyReport> build_reports(const std::vector<std::pair<std::string, const std::vector<std::pair<std::int64_t, Scrape>>*>>& endpoints) {
  std::map<std::string, FamilyReport> families;
  for (const auto& [url, scrapes] : endpoints) {
    // family -> series key -> points, in time order
    std::map<std::string, std::map<std::string, std::vector<std::pair<std::int64_t, const SeriesValue*>>>> points;
    for (const auto& [ns, scrape] : *scrapes) {
      for (const auto& [name, fam] : scrape) {
        FamilyReport& fr = families[name];
        if (fr.type.empty()) {
          fr.type = fam.type;
          fr.help = fam.help;
        }
        for (const auto& [key, value] : fam.series) points[name][key].emplace_back(ns, &value);
      }
    }
    for (const auto& [name, series] : points) {
      for (const auto& [key, pts] : series) families[name].series.push_back(report(url, families[name].type, pts));
    }
  }
  return families;
}

}  // namespace

std::string ServerMetrics::json(const std::string& aiperf_version, const std::string& benchmark_id,
                                const std::string& input_config) const {
  std::vector<std::pair<std::string, const std::vector<std::pair<std::int64_t, Scrape>>*>> eps;
  std::int64_t first = 0, last = 0;
  for (const Endpoint& e : endpoints_) {
    eps.emplace_back(e.url, &e.scrapes);
    if (!e.scrapes.empty()) {
      first = first == 0 ? e.scrapes.front().first : std::min(first, e.scrapes.front().first);
      last = std::max(last, e.scrapes.back().first);
    }
  }
  const auto families = build_reports(eps);
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartObject();
  w.Key("schema_version");
  w.String("1.0");
  w.Key("aiperf_version");
  w.String(aiperf_version.c_str());
  w.Key("benchmark_id");
  w.String(benchmark_id.c_str());
  w.Key("summary");
  w.StartObject();
  w.Key("endpoints_configured");
  w.StartArray();
  for (const Endpoint& e : endpoints_) w.String(e.url.c_str());
  w.EndArray();
  w.Key("endpoints_successful");
  w.StartArray();
  for (const Endpoint& e : endpoints_) {
    if (!e.scrapes.empty()) w.String(e.url.c_str());
  }
  w.EndArray();
  w.Key("start_time");
  w.String(first != 0 ? naive_local_iso(first).c_str() : "");
  w.Key("end_time");
  w.String(last != 0 ? naive_local_iso(last).c_str() : "");
  w.Key("endpoint_info");
  w.StartObject();
  for (const Endpoint& e : endpoints_) {
    w.Key(e.url.c_str());
    w.StartObject();
    w.Key("total_fetches");
    w.Int(e.fetches);
    w.Key("failed_fetches");
    w.Int(e.failed);
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  w.Key("metrics");
  w.StartObject();
  for (const auto& [name, fam] : families) {
    w.Key(name.c_str());
    w.StartObject();
    w.Key("type");
    w.String(fam.type.c_str());
    if (const char* unit = unit_of(name)) {
      w.Key("unit");
      w.String(unit);
    }
    w.Key("description");
    w.String(fam.help.c_str());
    w.Key("series");
    w.StartArray();
    for (const SeriesReport& s : fam.series) {
      w.StartObject();
      w.Key("endpoint_url");
      w.String(s.url.c_str());
      w.Key("labels");
      w.StartObject();
      for (const auto& [k, v] : s.labels) {
        w.Key(k.c_str());
        w.String(v.c_str());
      }
      w.EndObject();
      w.Key("stats");
      write_stats(w, s.stats);
      if (!s.buckets.empty()) {
        w.Key("buckets");
        write_stats(w, s.buckets);
      }
      w.Key("timeslices");
      w.StartArray();
      for (const auto& [span, stats] : s.timeslices) {
        w.StartObject();
        w.Key("start_ns");
        w.Int64(span.first);
        w.Key("end_ns");
        w.Int64(span.second);
        for (const auto& [k, v] : stats) {
          w.Key(k.c_str());
          w.Double(v);
        }
        w.EndObject();
      }
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndObject();
  w.Key("input_config");
  w.RawValue(input_config.c_str(), input_config.size(), rapidjson::kObjectType);
  w.EndObject();
  return sb.GetString();
}

std::string ServerMetrics::csv() const {
  std::vector<std::pair<std::string, const std::vector<std::pair<std::int64_t, Scrape>>*>> eps;
  for (const Endpoint& e : endpoints_) eps.emplace_back(e.url, &e.scrapes);
  const auto families = build_reports(eps);
  std::string out;
  const std::vector<std::pair<std::string, std::vector<std::string>>> sections = {
      {"gauge", {"avg", "min", "max", "std", "p50", "p90", "p99"}},
      {"counter", {"total", "rate"}},
      {"histogram", {"count", "sum", "avg", "p50_estimate", "p90_estimate", "p99_estimate"}},
      {"unknown", {"avg", "min", "max", "std", "p50", "p90", "p99"}},
      {"info", {"avg", "min", "max"}},
  };
  for (const auto& [type, columns] : sections) {
    std::string section;
    for (const auto& [name, fam] : families) {
      if (fam.type != type && !(type == "histogram" && fam.type == "summary")) continue;
      for (const SeriesReport& s : fam.series) {
        if (section.empty()) {
          section += "Endpoint,Metric,Labels";
          for (const std::string& c : columns) section += "," + c;
          section += "\n";
        }
        std::string labels;
        for (const auto& [k, v] : s.labels) labels += (labels.empty() ? "" : ";") + k + "=" + v;
        section += csv_field(s.url) + "," + csv_field(name) + "," + csv_field(labels);
        for (const std::string& c : columns) {
          std::string cell;
          for (const auto& [k, v] : s.stats) {
            if (k == c) cell = strprintf("%.6g", v);
          }
          section += "," + cell;
        }
        section += "\n";
      }
    }
    if (section.empty()) continue;
    if (!out.empty()) out += "\n";
    out += section;
  }
  return out;
}

}  // namespace ixfake::aiperf
