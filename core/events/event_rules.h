// The protocol's event rules, the one statement of them that both ends
// check against (docs/COLLECTOR.md has them as a table): the names (a
// sweep id, a result file's name), the limits, and what one event object
// must be. The node agent checks each datagram with them before it spools
// it (node_agent/event_socket.h, StampEvent), so a bad event is refused
// where its sender is known; the collector checks every event of a batch
// with them before it stores anything (submitter/collector/
// event_validation.h, ParseEventBatch). Each end words its own errors from
// an EventProblem.
#pragma once

#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/base/result.h"

namespace ix {

// --- the limits ---
inline constexpr size_t kMaxEventBytes = size_t{64} << 10;       // one event as stamped and stored (compact JSON)
inline constexpr size_t kMaxEventsPerBatch = 1000;              // events in one POST /v1/events
inline constexpr size_t kMaxEventsBodyBytes = size_t{4} << 20;  // the body of one POST /v1/events
inline constexpr size_t kMaxEventIdBytes = 200;
inline constexpr size_t kMaxEventNameBytes = 32;
inline constexpr size_t kMaxStepBytes = 64;
inline constexpr size_t kMaxNodeBytes = 255;
inline constexpr size_t kMaxSweepIdBytes = 64;
inline constexpr size_t kMaxResultNameBytes = 255;
// Objects and arrays inside one event nest at most this deep (the event
// object itself is level 1), so reading, storing and printing it never
// recurses far.
inline constexpr int kMaxEventDepth = 32;

// How both ends parse event JSON: iteratively, so no input can exhaust the
// stack; with its UTF-8 checked, since what is stored is printed again as
// JSON; and with numbers as their text, passed on as they came. Reading a
// number and printing it again is not stable in RapidJSON 1.1.0: its
// default reader can be an ulp off, so a number would change each time an
// event is stamped or stored (fuzz/agent_event_fuzz found it), and its
// exact reader has UB on some inputs (clz(0) in DiyFp::Normalize).
inline constexpr unsigned kEventParseFlags =
    rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag | rapidjson::kParseNumbersAsStringsFlag;

// A compact JSON writer for events: a number given as its text (see
// kEventParseFlags) is written as it came. RapidJSON 1.1.0's own
// Writer::RawNumber would write it as a string.
class EventWriter : public rapidjson::Writer<rapidjson::StringBuffer> {
 public:
  explicit EventWriter(rapidjson::StringBuffer& out) : rapidjson::Writer<rapidjson::StringBuffer>(out) {}
  bool RawNumber(const Ch* s, rapidjson::SizeType n, bool) { return RawValue(s, n, rapidjson::kNumberType); }
};

// --- the names ---
// A sweep id is [A-Za-z0-9._-]{1,64}, neither "." nor ".." (so no '/',
// NUL or "..": safe as a path component and in a URL). "..." is a name. A
// result file's name is NAME or DIR/NAME, each part such a name (one
// directory level: AIPerf's aiperf_artifacts/ of an agentic entry), 255
// bytes in all.
bool IsValidSweepId(std::string_view s);
bool IsValidResultName(std::string_view s);
// The same checks with what is allowed as the error ("must be 1 to 64
// characters from ..."), prefixed by nothing: callers name the field.
Status CheckSweepId(std::string_view s);
Status CheckResultName(std::string_view s);

// --- one event ---

// What kind of JSON value a SAX call is, as the field rules see it.
// kInteger is non-negative and within int64 (what an integer column holds);
// a larger one is a kNumber.
enum class JsonKind { kNull, kBool, kInteger, kNegative, kNumber, kString, kObject, kArray };

// Where an event is checked. A datagram's `sender` and `node` are claims
// that the agent replaces, so any value passes; a stamped event's `node` is
// the agent's word and must be a string of 1 to kMaxNodeBytes bytes.
enum class EventStage { kDatagram, kStamped };

// Why an event breaks the rules. `field` is the top-level field at fault
// ("" when the problem is the whole event's); `rule` says what is allowed
// ("must be a number (unix seconds)", "missing; must be ..."); `got` names
// the value that broke it ("a string \"1.0\"", control and non-ASCII bytes
// as \xNN, cut at 40 bytes), "" when the problem is not one value's.
struct EventProblem {
  std::string field;
  std::string rule;
  std::string got;
};

// The protocol's fields of an event, as an EventChecker read them. Valid
// once the checker is done(): id, event and step as the rules allow, time
// finite, entry >= 0, node (read at EventStage::kStamped only: a
// datagram's is a claim) 1 to kMaxNodeBytes bytes.
struct EventFields {
  std::string id;     // "STEP:SEQ"
  std::string event;  // [a-z_]{1,32}
  std::string step;   // 1..64 bytes
  double time = 0;    // unix seconds
  std::optional<std::string> sweep;
  std::optional<int64_t> entry;
  std::optional<std::string> node;
};

// Checks one event as its SAX calls stream past, in document order, so no
// copy of it is needed and the first problem stops the parse: an object;
// `id` a string of 1 to 200 bytes "STEP:SEQ" (STEP without ':', SEQ decimal
// digits); `event` [a-z_]{1,32}; `step` a string of 1 to 64 bytes; `time` a
// number; optional `sweep` a sweep id; optional `entry` a non-negative
// integer; optional `node` (stamped events) a string of 1 to 255 bytes; no
// top-level key twice; nested at most kMaxEventDepth levels; other fields
// free; no number anywhere beyond the range of a double (one too small
// reads as 0); every string and key UTF-8 once unescaped. The size is
// CheckEventSize's. Each call returns false on the first broken rule, and
// problem() says which. Invariant: once a call returned false,
// problem().rule is set; done() only after the root object closed with
// every rule kept, and then fields() holds what the protocol's fields
// said. One checker per event.
class EventChecker {
 public:
  explicit EventChecker(EventStage stage) : stage_(stage) {}

  bool Scalar(JsonKind kind, std::string_view text = {});  // null, a boolean, or a string's bytes
  bool Number(std::string_view text);                      // a JSON number's text
  bool Key(std::string_view key);
  bool Open(JsonKind kind);  // kObject or kArray
  bool Close();              // closing the root checks that id, event, step and time came

  bool done() const { return done_; }
  const EventProblem& problem() const { return problem_; }
  const EventFields& fields() const { return fields_; }

 private:
  bool CheckField(JsonKind kind, std::string_view text, double number);
  void Keep(JsonKind kind, std::string_view text, double number);
  bool Fail(std::string field, std::string rule, std::string got = "");

  EventStage stage_;
  int depth_ = 0;
  bool done_ = false;
  std::string key_;  // the current top-level key
  std::set<std::string, std::less<>> seen_;
  EventProblem problem_;
  EventFields fields_;
};

// An event of `compact_bytes` bytes as compact JSON (the stored form, with
// sender and node) is within kMaxEventBytes; the error says how many of how
// many ("is N bytes as compact JSON; at most 65536 are allowed").
Status CheckEventSize(size_t compact_bytes);

// A RapidJSON SAX handler that shows each call to an EventChecker first and
// passes it on to `next` only when the event still keeps the rules: put it
// in front of an EventWriter (or any handler) to check and copy an event in
// one pass, from a Reader with kEventParseFlags (numbers as text) or from a
// parsed Value's Accept (which stops descending when the depth limit is
// broken, so its recursion is bounded).
template <class Next>
class CheckedEventHandler {
 public:
  using Ch = char;
  CheckedEventHandler(EventChecker& checker, Next& next) : c_(checker), n_(next) {}

  bool Null() { return c_.Scalar(JsonKind::kNull) && n_.Null(); }
  bool Bool(bool b) { return c_.Scalar(JsonKind::kBool) && n_.Bool(b); }
  bool Int(int i) { return c_.Number(Text(i)) && n_.Int(i); }
  bool Uint(unsigned u) { return c_.Number(Text(u)) && n_.Uint(u); }
  bool Int64(int64_t i) { return c_.Number(Text(i)) && n_.Int64(i); }
  bool Uint64(uint64_t u) { return c_.Number(Text(u)) && n_.Uint64(u); }
  bool Double(double d) { return c_.Number(Text(d)) && n_.Double(d); }
  bool RawNumber(const Ch* s, rapidjson::SizeType n, bool copy) {
    return c_.Number(std::string_view(s, n)) && n_.RawNumber(s, n, copy);
  }
  bool String(const Ch* s, rapidjson::SizeType n, bool copy) {
    return c_.Scalar(JsonKind::kString, std::string_view(s, n)) && n_.String(s, n, copy);
  }
  bool StartObject() { return c_.Open(JsonKind::kObject) && n_.StartObject(); }
  bool Key(const Ch* s, rapidjson::SizeType n, bool copy) {
    return c_.Key(std::string_view(s, n)) && n_.Key(s, n, copy);
  }
  bool EndObject(rapidjson::SizeType members) { return c_.Close() && n_.EndObject(members); }
  bool StartArray() { return c_.Open(JsonKind::kArray) && n_.StartArray(); }
  bool EndArray(rapidjson::SizeType elements) { return c_.Close() && n_.EndArray(elements); }

 private:
  // A number read as a value, as text for the checker (a double that is
  // not finite as "inf" or "nan", which the checker refuses).
  template <class T>
  std::string_view Text(T v) {
    const std::to_chars_result r = std::to_chars(buf_, buf_ + sizeof buf_, v);
    return std::string_view(buf_, static_cast<size_t>(r.ptr - buf_));
  }

  EventChecker& c_;
  Next& n_;
  char buf_[32];
};

}  // namespace ix
