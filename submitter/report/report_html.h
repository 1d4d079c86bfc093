// RenderReport: one sweep's report as a single self-contained HTML page (no
// network, no script, no external font, image or stylesheet; the system
// font stack): a header (sweep id, mode, when generated, entries per state),
// a section per config key (in order of first appearance) with its charts
// (report_charts.h says which and what they hold) and one table of every
// entry (report_table.h).
//
// Markup the browser test relies on: every chart is an
// <svg class="ix-chart" data-chart="KIND"> inside a <figure>; a section is
// <section class="ix-config" id="config-N">. The output depends only on
// `data` (same data, same bytes).
#pragma once

#include <string>

#include "submitter/report/report_data.h"

namespace ix {

std::string RenderReport(const ReportData& data);

}  // namespace ix
