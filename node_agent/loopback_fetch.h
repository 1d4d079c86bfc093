// FetchLoopback: HTTP GETs of URLs on this host (an engine's /metrics),
// all at once, within one short deadline, for the agent's single-threaded
// poll loop: one engine that accepts and never answers (a hung engine does
// exactly that) costs the loop the deadline once, not once per engine.
//
// Only loopback URLs are fetched: `http://` with the host 127.0.0.1, ::1
// (any spelling of them) or localhost (127.0.0.1, then ::1; no resolver).
// The URLs come from the job user's ix-stepd; the agent runs as root, so it
// must not be made to reach other hosts.
//
// The HTTP is core/process/http_probe.h's: ParseHttpUrl for the URL and
// ParseHttpAnswer for the answer (Content-Length, chunked or up to the
// close; 1xx skipped; its caps: 64 KiB of headers, 1 MiB of body). That
// header's SocketProber fetches one URL at a time and keeps the body to
// itself, hence the sockets here.
//
// Invariants: never throws, never raises SIGPIPE, starts no thread, closes
// every descriptor it opened before it returns, and returns within
// `timeout` (the connect, the request and the answer together).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/process/http_probe.h"

namespace ix {

// `url` parsed (ParseHttpUrl) when its host is loopback; else an Error
// naming the URL and what is allowed.
Result<HttpUrl> ParseLoopbackUrl(std::string_view url);

// GETs every URL at once; one result per URL, in order: the body of a 200
// answer, else an Error that starts with the URL ("URL: HTTP 503", "URL:
// connection refused", "URL: no answer within 500 ms (0 bytes received)").
std::vector<Result<std::string>> FetchLoopback(const std::vector<std::string>& urls,
                                               std::chrono::milliseconds timeout);

}  // namespace ix
