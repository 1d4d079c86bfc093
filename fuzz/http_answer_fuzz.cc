// libFuzzer target for what the readiness prober parses from the network
// (core/process/http_probe.h): the bytes of an HTTP answer (ParseHttpAnswer, with
// the connection open and closed, and a prefix of them as a read that has
// not finished) and a probe URL (ParseHttpUrl). Errors are expected;
// crashes, leaks, UB and hangs are bugs, and so are: an incomplete answer
// once the connection is closed; a complete one whose body is over the cap
// or whose status is not a final one; a prefix that is complete or bad
// while the whole is not the same; a URL that parses to a host, port or
// target that would not give the same URL back or that holds a space or a
// control character (it goes into the request line).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/process/http_probe.h"
#include "fuzz/fuzz_util.h"

namespace {

using State = ix::HttpAnswer::State;

bool Same(const ix::HttpAnswer& a, const ix::HttpAnswer& b) {
  return a.state == b.state && a.status == b.status && a.body == b.body;
}

void CheckAnswer(std::string_view raw) {
  const ix::HttpAnswer open = ix::ParseHttpAnswer(raw, false);
  const ix::HttpAnswer closed = ix::ParseHttpAnswer(raw, true);
  ixfuzz::Check(closed.state != State::kIncomplete, "an incomplete answer after the close");
  for (const ix::HttpAnswer* a : {&open, &closed}) {
    if (a->state != State::kComplete) continue;
    ixfuzz::Check(a->status >= 200 && a->status <= 999, "a complete answer with status " + std::to_string(a->status));
    ixfuzz::Check(a->body.size() <= ix::kProbeMaxBody, "a body over the cap");
  }
  // What was complete or bad before the close stays so after it.
  if (open.state != State::kIncomplete) ixfuzz::Check(Same(open, closed), "the close changed a finished answer");
  // A read in progress: a prefix that is finished decides the answer.
  const std::string_view prefix = raw.substr(0, raw.size() / 2);
  const ix::HttpAnswer part = ix::ParseHttpAnswer(prefix, false);
  if (part.state == State::kComplete) ixfuzz::Check(Same(part, open), "more bytes changed a complete answer");
  if (part.state == State::kBad) ixfuzz::Check(open.state == State::kBad, "more bytes mended a bad answer");
}

bool Clean(const std::string& s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return false;
  }
  return true;
}

void CheckUrl(std::string_view text) {
  ix::Result<ix::HttpUrl> u = ix::ParseHttpUrl(text);
  if (!u) return;
  const ix::HttpUrl& url = u.value();
  ixfuzz::Check(!url.host.empty() && url.port >= 1, "a URL without host or port");
  ixfuzz::Check(!url.target.empty() && url.target[0] == '/', "a request target that is not a path: " + url.target);
  ixfuzz::Check(Clean(url.target) && Clean(url.host_header), "a space or control character in the request");
  ixfuzz::Check(url.target.find('#') == std::string::npos, "a fragment in the request target");
  ix::Result<ix::HttpUrl> again = ix::ParseHttpUrl("http://" + url.host_header + url.target);
  if (!again) ixfuzz::Fail("the URL as requested does not parse: " + again.error().message);
  ixfuzz::Check(again.value().host == url.host && again.value().port == url.port &&
                    again.value().target == url.target && again.value().host_header == url.host_header,
                "the URL as requested parses to another one");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ixfuzz::CheckText(data, size, CheckAnswer, CheckUrl);
}
