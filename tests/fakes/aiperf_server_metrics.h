// The fake AIPerf's server metrics (tests/fakes/README.md, "aiperf"):
// Prometheus text parsed into metric families named as prometheus_client's
// parser names them (a counter's "_total" stripped, histogram samples under
// their family), the profiling-period scrapes of every endpoint, and the two
// artifacts built from them, server_metrics_export.json (per-series stats
// over profiling and per-slice timeslices) and server_metrics_export.csv.
// No HTTP here: the run fetches and hands the text over.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ixfake::aiperf {

// One series of a family in one scrape. `labels` are sorted by name and
// never hold a histogram's "le"; a counter or gauge has `value`, a
// histogram or summary `sum`, `count` and (histogram) cumulative `buckets`
// by upper bound.
struct SeriesValue {
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
  double sum = 0;
  double count = 0;
  std::vector<std::pair<std::string, double>> buckets;  // {"0.1", n}, ..., {"+Inf", n}
};

// One family of one scrape: type "counter", "gauge", "histogram", "summary",
// "info" or "unknown" (untyped), and its series by label key.
struct FamilyValues {
  std::string type;
  std::string help;
  std::map<std::string, SeriesValue> series;
};

using Scrape = std::map<std::string, FamilyValues>;

// Parses a /metrics body. Lines it cannot read are skipped.
Scrape parse_prometheus(const std::string& text);

// Every scrape of the profiling period, per endpoint, and the artifacts.
// Invariant: scrapes are added in time order per endpoint.
class ServerMetrics {
 public:
  explicit ServerMetrics(std::vector<std::string> urls);
  const std::vector<std::string>& urls() const { return urls_; }
  // One fetch of endpoint `index` at `unix_ns`; nullopt for a failed fetch.
  void add(std::size_t index, std::int64_t unix_ns, std::optional<Scrape> scrape);

  // server_metrics_export.json; `input_config` is the command line as a
  // JSON object.
  std::string json(const std::string& aiperf_version, const std::string& benchmark_id,
                   const std::string& input_config) const;
  // server_metrics_export.csv: sections gauge, counter, histogram, unknown,
  // info (those with rows), separated by blank lines.
  std::string csv() const;

 private:
  struct Endpoint {
    std::string url;
    int fetches = 0;
    int failed = 0;
    std::vector<std::pair<std::int64_t, Scrape>> scrapes;
  };
  std::vector<std::string> urls_;
  std::vector<Endpoint> endpoints_;
};

}  // namespace ixfake::aiperf
