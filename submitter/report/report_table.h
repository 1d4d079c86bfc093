// The report's table of every sweep entry (charted or not): where it ran,
// its kind (fixed-seq-len or agentic), how it ended, its numbers (agentic:
// no p99 TTFT, but the GPU prefix-cache hit rate and the offload tier's)
// and links to its logs. A failed row is marked
// by a symbol and bold state text, not by colour alone.
#pragma once

#include <string>
#include <string_view>

#include "submitter/report/report_data.h"

namespace ix {

// The id of the report section of the config key at `group_index` (0-based,
// in order of first appearance): "config-1", ...; the table links to it.
std::string ConfigSectionId(size_t group_index);

// The state as the table shows it: a symbol and the word ("✗ failed");
// unknown states as they are.
std::string StateText(std::string_view state);

// Whether `href` may be a link: a relative path (no scheme such as
// "javascript:", no "//host", no backslash or control byte), not empty.
bool IsSafeRelativeHref(std::string_view href);

// <table class="ix-entries"> with a row per entry, in sweep order.
std::string RenderEntriesTable(const ReportData& data);

}  // namespace ix
