#include "submitter/report/report_html.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "submitter/report/report_sample.h"
#include "submitter/report/report_table.h"

namespace ix {
namespace {

using test::CountOf;
using test::ExpectCounts;

// The text of the section with `id`, up to the next section.
std::string SectionText(const std::string& html, const std::string& id) {
  const size_t start = html.find("<section class=\"ix-config\" id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  return html.substr(start, html.find("</section>", start) - start);
}

// The table row of entry `index`.
std::string Row(const std::string& html, int index) {
  size_t at = html.find("<tbody>");
  for (int i = 0; i <= index && at != std::string::npos; ++i) at = html.find("<tr class=\"ix-row", at + 1);
  if (at == std::string::npos) return "";
  return html.substr(at, html.find("</tr>", at) - at);
}

TEST(ReportHtml, SampleHasTheChartsSeriesAndPointsItsDataSays) {
  const std::string html = RenderReport(test::SampleReport());
  // report_sample.h, report_charts.h and agentic_charts.h: 4 charts for the
  // first key (energy and DEP too), 2 for each of the next two, 8 for the
  // agentic key.
  ExpectCounts(html, {{"<svg class=\"ix-chart\"", 16},
                      {"data-chart=\"throughput-interactivity\"", 3},
                      {"data-chart=\"ttft\"", 3},
                      {"data-chart=\"energy\"", 1},
                      {"data-chart=\"dep-sessions\"", 1},
                      {"data-chart=\"agentic-throughput-interactivity\"", 1},
                      {"data-chart=\"agentic-ttft-turn\"", 1},
                      {"data-chart=\"agentic-cache-hit\"", 1},
                      {"data-chart=\"agentic-kv-usage\"", 3},
                      {"data-chart=\"agentic-dp-sessions\"", 1},
                      {"data-chart=\"agentic-dp-hit-rate\"", 1}});
  // Series: 3 + 6 + 3 + 4 (first key), 1 + 2 (second), none (third), then
  // 3 + 3 + 4 + 6 + 4 + 4 (agentic).
  EXPECT_EQ(CountOf(html, "class=\"ix-series\""), 43u);
  // Points: 11 + 22 + 10 + 16 bars, then 2 + 4, then 6 + 30 + 7 + 72 + 12 + 16.
  ExpectCounts(html, {{"class=\"ix-point\"", 208},
                      {"class=\"ix-frontier\"", 3},
                      {">no data</text>", 2},
                      {"<tr class=\"ix-row", 25}});
}

TEST(ReportHtml, IsSelfContained) {
  const std::string html = RenderReport(test::SampleReport());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // only the SVG namespace
  test::ExpectLacks(html, {"https://", "<img", "@import", "url("});
  EXPECT_NE(html.find("<style>"), std::string::npos);
}

TEST(ReportHtml, HeaderCountsEntriesPerState) {
  const std::string html = RenderReport(test::SampleReport());
  test::ExpectHas(html, {"sw-20261205-182233-3f9a",
                         "full-sweep-fail-fast",
                         "2026-12-05 18:40:02 UTC",
                         "\xe2\x9c\x93 succeeded: 19</li>",
                         "\xe2\x9c\x97 failed: 3</li>",
                         "running: 1</li>",
                         "pending: 1</li>",
                         "cancelled: 1</li>"});
}

TEST(ReportHtml, EscapesTheConfigKeyEverywhere) {
  const std::string html = RenderReport(test::SampleReport());
  EXPECT_EQ(html.find(test::kOddKey), std::string::npos);
  EXPECT_EQ(html.find("<&>"), std::string::npos);
  // Nav, section heading and three table rows.
  EXPECT_EQ(CountOf(html, "llama&lt;&amp;&gt;&quot;q&#39;-fp8"), 5u);
}

TEST(ReportHtml, EnergyChartOnlyWhereAKeyHasValidPower) {
  const std::string html = RenderReport(test::SampleReport());
  const std::string first = SectionText(html, "config-1");
  const std::string second = SectionText(html, "config-2");
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(second.empty());
  EXPECT_EQ(CountOf(first, "data-chart=\"energy\""), 1u);
  EXPECT_EQ(CountOf(first, "ix-no-energy"), 0u);
  ExpectCounts(second, {{"data-chart=\"energy\"", 0},
                        {"ix-no-energy", 1},
                        {"data-chart=\"dep-sessions\"", 0}});
}

TEST(ReportHtml, TableMarksFailuresAndLinksLogs) {
  const std::string html = RenderReport(test::SampleReport());
  const std::string failed = Row(html, 7);  // tep4 conc 256
  EXPECT_NE(failed.find("ix-failed"), std::string::npos) << failed;
  test::ExpectHas(failed, {"\xe2\x9c\x97 failed",
                           "engine exited with status 1 before ready (vllm-rank2)",
                           "<a href=\"results/7/server.log\">server.log</a>"});
  EXPECT_EQ(CountOf(failed, "<td class=\"num\">\xe2\x80\x94</td>"), 6u);  // no metrics
  const std::string ok = Row(html, 0);
  EXPECT_EQ(ok.find("ix-failed"), std::string::npos);
  EXPECT_NE(ok.find("<td class=\"ix-state\">\xe2\x9c\x93 succeeded</td>"), std::string::npos);
  EXPECT_NE(ok.find("4242_0"), std::string::npos);
  EXPECT_EQ(CountOf(html, "class=\"ix-row ix-state-failed ix-failed\""), 3u);
  EXPECT_NE(Row(html, 12).find("<td>\xe2\x80\x94</td>"), std::string::npos);  // pending: no Slurm job
}

TEST(ReportHtml, AgenticKeyHasOnlyAgenticChartsAndItsRowsTheirNumbers) {
  const std::string html = RenderReport(test::SampleReport());
  const std::string agentic = SectionText(html, "config-4");
  ASSERT_FALSE(agentic.empty());
  EXPECT_EQ(CountOf(agentic, "data-chart=\"agentic-"), 8u);
  EXPECT_EQ(CountOf(agentic, "<svg class=\"ix-chart\""), 8u);  // no fixed-seq-len chart
  EXPECT_EQ(CountOf(agentic, "ix-no-energy"), 0u);
  EXPECT_EQ(CountOf(agentic, "<h3 class=\"ix-kind\">"), 1u);
  EXPECT_EQ(CountOf(SectionText(html, "config-1"), "<h3 class=\"ix-kind\">"), 0u);  // one kind: no headings
  const std::string tp4 = Row(html, 18);  // tp4 conc 8: hit rate 0.75 - 0.016
  EXPECT_NE(tp4.find("<td class=\"ix-scenario\">agentic</td>"), std::string::npos) << tp4;
  EXPECT_NE(tp4.find("<td class=\"num\">73.4%</td>"), std::string::npos);
  EXPECT_EQ(CountOf(tp4, "<td class=\"num\">\xe2\x80\x94</td>"), 1u);  // p99 TTFT only
  const std::string offload = Row(html, 23);
  EXPECT_NE(offload.find("<td>dep4 + cpu offload</td>"), std::string::npos) << offload;
  EXPECT_NE(offload.find("(CPU 8.0%)</td>"), std::string::npos);
  EXPECT_NE(Row(html, 0).find("<td class=\"ix-scenario\">fixed</td>"), std::string::npos);
}

TEST(ReportHtml, KeyWithBothKindsHasAHeadingAndChartsForEach) {
  ReportData data = test::SampleReport();
  for (ReportEntry& e : data.entries) {
    if (e.config_key == test::kAgenticKey) e.config_key = data.entries[0].config_key;
  }
  const std::string first = SectionText(RenderReport(data), "config-1");
  ExpectCounts(first, {{"<h3 class=\"ix-kind\">", 2},
                       {"<svg class=\"ix-chart\"", 12},
                       {"data-chart=\"throughput-interactivity\"", 1},
                       {"data-chart=\"agentic-throughput-interactivity\"", 1}});
}

TEST(ReportHtml, UnsafeHrefsAreNotLinks) {
  for (const char* safe : {"results/3/server.log", "a/b:c.log"}) EXPECT_TRUE(IsSafeRelativeHref(safe)) << safe;
  for (const char* unsafe : {"javascript:alert(1)", "//evil.example/x", "a\\b", ""}) {
    EXPECT_FALSE(IsSafeRelativeHref(unsafe)) << unsafe;
  }
  ReportData data = test::SampleReport();
  data.entries[0].logs = {{"evil", "javascript:alert(1)"}, {"ok\"x", "x\".log"}};
  const std::string html = RenderReport(data);
  EXPECT_EQ(html.find("javascript:"), std::string::npos);
  EXPECT_NE(Row(html, 0).find(">evil \xc2\xb7 <a href=\"x&quot;.log\">ok&quot;x</a>"), std::string::npos);
}

TEST(ReportHtml, EmptySweepRendersWithoutCharts) {
  ReportData data;
  data.sweep_id = "sw-empty";
  const std::string html = RenderReport(data);
  EXPECT_NE(html.find("This sweep has no entries."), std::string::npos);
  EXPECT_EQ(CountOf(html, "<svg class=\"ix-chart\""), 0u);
  EXPECT_EQ(CountOf(html, "<tr class=\"ix-row"), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

TEST(ReportHtml, OutputIsDeterministic) {
  EXPECT_EQ(RenderReport(test::SampleReport()), RenderReport(test::SampleReport()));
}

// Not a check: with IX_REPORT_SAMPLE_OUT set, writes the sample report
// there, for tests/report_browser_test.sh to open in Chromium.
TEST(ReportHtml, WritesTheSampleWhenAsked) {
  const char* out = std::getenv("IX_REPORT_SAMPLE_OUT");
  if (out == nullptr || *out == '\0') return;
  std::ofstream file(out, std::ios::binary | std::ios::trunc);
  file << RenderReport(test::SampleReport());
  file.close();
  EXPECT_TRUE(file.good()) << out;
}

}  // namespace
}  // namespace ix
