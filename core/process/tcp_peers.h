// TCP peers: whether this network namespace holds an established TCP
// connection to a given address, read from /proc/net/tcp and tcp6 (the
// kernel's socket tables, readable by any user, per network namespace).
// It is how a node after the head of a multi-node step knows its engine
// joined the head (docs/MULTINODE.md): the connection exists, whatever
// protocol runs over it.
#pragma once

#include <string>
#include <string_view>

#include "core/base/result.h"

namespace ix {

// Whether `table` (the text of /proc/net/tcp or /proc/net/tcp6) lists a
// connection in state ESTABLISHED whose remote address is `addr` (IPv4
// dotted or IPv6; an IPv4 address also matches its v4-mapped IPv6 form).
// A malformed line is skipped. Pure.
bool TableHasEstablishedTo(std::string_view table, const std::string& addr);

// An endpoint as those tables print it ("0100007F:1F90") in the usual
// notation ("127.0.0.1:8080", "[::1]:8080"); "" when it does not parse. Pure.
std::string KernelEndpointText(std::string_view text);

// The same over this namespace's /proc/net/tcp and /proc/net/tcp6; an
// Error when `addr` is not a numeric address or neither table can be read.
Result<bool> HasEstablishedTo(const std::string& addr);

}  // namespace ix
