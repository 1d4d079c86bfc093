// The agent's end of the event protocol (docs: the agent/collector
// protocol): the unix datagram socket that ix-stepd and `ixsubmit task`
// send one JSON event per datagram to, what the kernel says about each
// sender, and the stamping of an event before it goes into the spool.
//
// Meant for a single-threaded poll() loop: EventSocket::fd() is
// non-blocking; on POLLIN call Receive() until it returns nullopt (the
// queue is drained), StampEvent each datagram, then Spool::Append the batch
// (one fdatasync for all).
//
// Queueing, for whoever sizes the loop: for AF_UNIX datagrams the kernel
// charges a queued datagram to the SENDER's send buffer and bounds the
// receiver's queue by its length (sysctl net.unix.max_dgram_qlen: 10 in the
// kernel, 512 where systemd sets it); a sender meets EAGAIN (and EventSink
// drops the event) once either is full. SO_RCVBUF matters little here; it
// is set large anyway, as the design asks.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/result.h"
#include "core/base/unique_fd.h"
// The protocol's rules: kMaxEventBytes (the most bytes of one datagram and
// of one stamped event), IsValidSweepId and IsValidResultName (the spool's
// and the routes' names), and the check of an event StampEvent makes.
#include "core/events/event_rules.h"

namespace ix {

// One datagram as received. Invariants: `fd` is empty or the one
// descriptor the datagram carried, close-on-exec; when `truncated` or
// `bad_descriptors` is set, `bytes` is empty and `fd` is empty (the event
// is to be dropped and counted, never half-used).
struct ReceivedDatagram {
  std::string bytes;
  bool has_credentials = false;  // false only if SO_PASSCRED was off (never for Bind's socket)
  pid_t pid = 0;                 // the sender, as the kernel saw it (SCM_CREDENTIALS)
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  UniqueFd fd;                   // the SCM_RIGHTS descriptor, if exactly one came
  bool truncated = false;        // longer than kMaxEventBytes
  bool bad_descriptors = false;  // more than one descriptor, or the control data was cut (all closed)
};

// What an EventSocket has seen since Bind. Plain counters, read and written
// by the loop thread only.
struct EventSocketCounters {
  uint64_t received = 0;         // datagrams returned by Receive (flagged ones too)
  uint64_t truncated = 0;        // of which too long
  uint64_t bad_descriptors = 0;  // of which with more than one descriptor or cut control data
  uint64_t errors = 0;           // recvmsg failures other than "nothing queued"
};

// The bound socket. Invariants: fd() is a bound AF_UNIX SOCK_DGRAM socket,
// non-blocking, close-on-exec, with SO_PASSCRED on; the socket file at
// path() has mode 0666. Movable, not copyable. The destructor closes the
// socket but leaves the file: a later Bind removes it, and removing it here
// could remove a newer agent's socket.
class EventSocket {
 public:
  // Binds `path` (absolute, at most 107 bytes). An existing file there is
  // removed only when it is a socket (lstat: a symlink, regular file or
  // directory is refused with an error naming it) and no process is bound
  // to it (connect() is refused: a stale socket); a live one is an error
  // (another agent runs). The receive buffer is asked for `rcvbuf_bytes`
  // (SO_RCVBUFFORCE, which needs CAP_NET_ADMIN, else SO_RCVBUF, which the
  // kernel caps at net.core.rmem_max).
  static Result<EventSocket> Bind(const std::string& path, int rcvbuf_bytes = 4 << 20);

  EventSocket(EventSocket&&) = default;
  EventSocket& operator=(EventSocket&&) = default;

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }
  // The receive buffer the kernel granted (getsockopt; the kernel doubles
  // what was asked, for its bookkeeping).
  int rcvbuf_bytes() const { return rcvbuf_bytes_; }

  // The next queued datagram, without blocking; nullopt when none is queued
  // (or recvmsg failed: counters().errors and last_error() say so). EINTR
  // is retried. Flagged datagrams (truncated, bad_descriptors) are returned
  // too, so the caller can log who sent them.
  std::optional<ReceivedDatagram> Receive();

  const EventSocketCounters& counters() const { return counters_; }
  const std::string& last_error() const { return last_error_; }

 private:
  EventSocket(UniqueFd fd, std::string path, int rcvbuf) : fd_(std::move(fd)), path_(std::move(path)), rcvbuf_bytes_(rcvbuf) {}

  UniqueFd fd_;
  std::string path_;
  int rcvbuf_bytes_ = 0;
  EventSocketCounters counters_;
  std::string last_error_;
  std::string buffer_;  // kMaxEventBytes + 1, reused
};

// Sends `bytes` as one datagram to the socket at `socket_path`, with
// `fd_to_pass` (>= 0) as its SCM_RIGHTS descriptor (the caller keeps its
// own). Never waits: a missing agent, a full queue or a datagram too long
// is an Error naming the path and the errno. For tests and small senders;
// ix-stepd has EventSink.
Status SendDatagram(const std::string& socket_path, std::string_view bytes, int fd_to_pass = -1);

// The event in `datagram` as it goes into the spool: the same JSON object,
// compact, with `"sender":{"pid":P,"uid":U,"gid":G}` and `"node":HOSTNAME`
// appended (a `sender` or `node` the datagram claims is dropped, never
// trusted). Checked by the protocol's rules, as the collector checks it
// (core/events/event_rules.h: EventChecker at EventStage::kDatagram, then
// CheckEventSize on the result), so that a bad event is refused here, with
// its sender known, and not by the collector for a whole batch; also valid
// UTF-8 and no NUL byte. `hostname` is 1 to kMaxNodeBytes bytes. An Error
// says which field, what is allowed and what came ("event: field 'id':
// must be ..., got ..."). Pure; any bytes are safe to pass (no recursion,
// no crash).
Result<std::string> StampEvent(std::string_view datagram, pid_t pid, uid_t uid, gid_t gid, const std::string& hostname);

}  // namespace ix
