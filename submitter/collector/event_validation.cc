#include "submitter/collector/event_validation.h"

#include <rapidjson/encodedstream.h>
#include <rapidjson/memorystream.h>
// After the readers: RapidJSON's stack.h is then named
// rapidjson/internal/stack.h, the name tests/ubsan.supp matches.
#include <rapidjson/error/en.h>

#include <limits>
#include <memory>
#include <utility>

#include "core/base/text.h"

namespace ix {
namespace {

// "id: must be ..." or the whole event's problem; what came is not
// repeated to the sender.
std::string ProblemMessage(const EventProblem& p) { return p.field.empty() ? p.rule : p.field + ": " + p.rule; }

// One event of a batch being read: checked by the protocol's rules and
// copied as compact JSON in one pass.
struct EventCopy {
  EventCopy() : writer(buf), checker(EventStage::kStamped), handler(checker, writer) {}
  rapidjson::StringBuffer buf;
  EventWriter writer;
  EventChecker checker;
  CheckedEventHandler<EventWriter> handler;
  bool failed = false;
};

// Reads a POST /v1/events body as its SAX calls stream past: the root
// array, each element an event (EventCopy). Once an event fails, the rest
// is only counted, never checked; the parse goes on to the end, so that a
// syntax error, a root that is not an array or too many events, which the
// whole body is refused for, is named before any one event, as when the
// body was read whole first. Never stops the parse (no handler error).
class BatchReader {
 public:
  using Ch = char;

  bool Null() { return Element(0, [&](auto& h) { return h.Null(); }); }
  bool Bool(bool b) { return Element(0, [&](auto& h) { return h.Bool(b); }); }
  bool Int(int i) { return Element(0, [&](auto& h) { return h.Int(i); }); }
  bool Uint(unsigned u) { return Element(0, [&](auto& h) { return h.Uint(u); }); }
  bool Int64(int64_t i) { return Element(0, [&](auto& h) { return h.Int64(i); }); }
  bool Uint64(uint64_t u) { return Element(0, [&](auto& h) { return h.Uint64(u); }); }
  bool Double(double d) { return Element(0, [&](auto& h) { return h.Double(d); }); }
  bool RawNumber(const Ch* s, rapidjson::SizeType n, bool c) {
    return Element(0, [&](auto& h) { return h.RawNumber(s, n, c); });
  }
  bool String(const Ch* s, rapidjson::SizeType n, bool c) {
    return Element(0, [&](auto& h) { return h.String(s, n, c); });
  }
  bool Key(const Ch* s, rapidjson::SizeType n, bool c) { return Element(0, [&](auto& h) { return h.Key(s, n, c); }); }
  bool StartObject() { return Element(1, [&](auto& h) { return h.StartObject(); }); }
  bool EndObject(rapidjson::SizeType m) { return Element(-1, [&](auto& h) { return h.EndObject(m); }); }
  bool StartArray() {
    if (depth_ == 0 && !not_array_) {
      depth_ = 1;  // the batch
      return true;
    }
    return Element(1, [&](auto& h) { return h.StartArray(); });
  }
  bool EndArray(rapidjson::SizeType n) {
    if (depth_ == 1) {
      depth_ = 0;  // the batch's end
      return true;
    }
    return Element(-1, [&](auto& h) { return h.EndArray(n); });
  }

  bool not_array() const { return not_array_; }
  size_t count() const { return count_; }
  const std::string& first_error() const { return first_error_; }
  std::vector<ValidEvent>& events() { return events_; }

 private:
  // One SAX call inside the batch; `change` is +1 for an opening, -1 for a
  // closing, 0 for anything else.
  template <class Call>
  bool Element(int change, Call call) {
    if (depth_ == 0) not_array_ = true;  // a root other than an array
    if (not_array_) return true;
    if (depth_ == 1) Begin();
    depth_ += change > 0 ? 1 : 0;
    if (current_ && !current_->failed && !call(current_->handler)) {
      Refuse(ProblemMessage(current_->checker.problem()));
    }
    depth_ -= change < 0 ? 1 : 0;
    if (depth_ == 1) End();
    return true;
  }
  void Begin() {
    ++count_;
    // Past the first bad event or the limit the batch is refused anyway.
    if (first_error_.empty() && count_ <= kMaxEventsPerBatch) current_ = std::make_unique<EventCopy>();
  }
  void End() {
    if (!current_) return;
    if (!current_->failed) {
      const Status size = CheckEventSize(current_->buf.GetSize());
      if (!size) {
        Refuse(size.error().message);
      } else {
        ValidEvent e;
        static_cast<EventFields&>(e) = current_->checker.fields();
        e.body.assign(current_->buf.GetString(), current_->buf.GetSize());
        events_.push_back(std::move(e));
      }
    }
    current_.reset();
  }
  void Refuse(const std::string& why) {
    current_->failed = true;
    if (first_error_.empty()) first_error_ = "events[" + std::to_string(count_ - 1) + "]: " + why;
  }

  int depth_ = 0;  // 0: outside the batch, 1: in it, 2 and more: in an event
  bool not_array_ = false;
  size_t count_ = 0;
  std::unique_ptr<EventCopy> current_;
  std::string first_error_;
  std::vector<ValidEvent> events_;
};

}  // namespace

Result<std::vector<ValidEvent>> ParseEventBatch(std::string_view body) {
  if (body.size() > kMaxEventsBodyBytes) {
    return Error{"body: " + std::to_string(body.size()) + " bytes; at most " + std::to_string(kMaxEventsBodyBytes) +
                 " are allowed"};
  }
  BatchReader batch;
  // Read as a parsed document reads a sized buffer (a UTF-8 BOM skipped).
  rapidjson::MemoryStream ms(body.data(), body.size());
  rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> is(ms);
  rapidjson::Reader reader;
  const rapidjson::ParseResult parsed = reader.Parse<kEventParseFlags>(is, batch);
  if (!parsed) {
    return Error{std::string("body: not valid JSON (") + rapidjson::GetParseError_En(parsed.Code()) + " at byte " +
                 std::to_string(parsed.Offset()) + ")"};
  }
  if (batch.not_array()) return Error{"body: must be a JSON array of events"};
  if (batch.count() > kMaxEventsPerBatch) {
    return Error{"body: " + std::to_string(batch.count()) + " events; at most " +
                 std::to_string(kMaxEventsPerBatch) + " are allowed per request"};
  }
  if (!batch.first_error().empty()) return Error{batch.first_error()};
  return std::move(batch.events());
}

Result<int64_t> ParseEntryIndex(std::string_view s) {
  uint64_t v = 0;
  if (!ParseUnsigned(s, v) || v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Error{"must be a non-negative decimal integer (digits only, at most 9223372036854775807)"};
  }
  return static_cast<int64_t>(v);
}

Result<ResultTarget> ParseResultTarget(std::string_view rest) {
  const std::vector<std::string_view> parts = Split(rest, '/');
  if (parts.size() != 3 && parts.size() != 4) {
    return Error{"path: must be /v1/results/SWEEP/ENTRY/NAME or /v1/results/SWEEP/ENTRY/DIR/NAME"};
  }
  if (Status ok = CheckSweepId(parts[0]); !ok) return Error{"SWEEP in the path: " + ok.error().message};
  Result<int64_t> entry = ParseEntryIndex(parts[1]);
  if (!entry) return Error{"ENTRY in the path: " + entry.error().message};
  const size_t name_at = static_cast<size_t>(parts[2].data() - rest.data());
  const std::string_view name = rest.substr(name_at);
  if (Status ok = CheckResultName(name); !ok) return Error{"NAME in the path: " + ok.error().message};
  return ResultTarget{std::string(parts[0]), entry.value(), std::string(name)};
}

}  // namespace ix
