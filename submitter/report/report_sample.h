// SampleReport: a ReportData like a small real sweep, for the report's unit
// tests and (written out by report_html_test) the browser test. What it
// holds, and so what a report of it counts:
//
// - "dsv41flash-fp4-b300-vllm-1k1k": arms tp4, tep4, dep4 at conc 4, 16,
//   64, 256 (4 GPUs each): all succeed but tep4 256 (failed, no result);
//   dep4 has sessions_per_rank (4 ranks) and dep4 256 no valid power; plus
//   dep4 512 pending. 13 entries, 11 with a result, 10 with energy.
// - kOddKey (a key with & < > " '): arm tp8 at conc 1 and 8 (succeeded,
//   no valid power) and 64 (cancelled). 3 entries, 2 with a result.
// - "qwen3-bf16-h200-vllm-8k1k": dep8 conc 32 failed, tp2 conc 2 running;
//   no result at all.
#pragma once

#include <string_view>

#include "submitter/report/report_data.h"

namespace ix::test {

// How often `needle` occurs in `text` (not overlapping).
inline size_t CountOf(std::string_view text, std::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

inline constexpr const char* kOddKey = "llama<&>\"q'-fp8";

ReportData SampleReport();

}  // namespace ix::test
