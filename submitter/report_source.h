// The report's data (report/report_data.h) made from a sweep's stored
// results (sweep_results.h): each entry's record, the numbers of its agg
// result (or, for an agentic-coding entry, of its agentic aggregate and
// AIPerf artifacts: report/agentic_read.h), where ix-stepd placed it, and
// links to its files relative to the folder the report is written in.
#pragma once

#include <string>

#include "submitter/report/report_data.h"
#include "submitter/sweep_results.h"

namespace ix {

// `report_dir`: the folder of the report file (links are relative to it);
// `generated`: the time to show as when the report was written.
ReportData MakeReportData(const SweepResults& s, const std::string& report_dir, const std::string& generated);

}  // namespace ix
