// TCP for the fake engine's multi-node join (tests/fakes/README.md,
// "Multi-node"): the head's listening socket, a headless node's bounded
// connect, and a connection read and written one text line at a time, with
// deadlines (poll, never a busy loop).
#pragma once

#include <mutex>
#include <string>
#include <string_view>

namespace ixfake::vllm {

// The longest line either side sends or accepts, "\n" included.
inline constexpr std::size_t kMaxLineBytes = 512;

// Binds host:port (SO_REUSEADDR only, close-on-exec; the first address of
// host that binds) and listens. -1 with `error` set (strerror or the
// resolver's message) when it cannot.
int listen_tcp(const std::string& host, int port, std::string& error);

// One connect attempt to host:port that gives up after timeout_s (a host
// that drops SYNs). The connected socket (non-blocking, close-on-exec:
// LineSocket waits in poll), or -1 with `error` set.
int connect_tcp(const std::string& host, int port, double timeout_s, std::string& error);

// "10.0.0.2:41234", the other end of a connected socket, and this end ("?"
// if unknown).
std::string peer_name(int fd);
std::string local_name(int fd);

// A connected socket owned by this object. Reads come from one thread at a
// time; send_line may be called from any thread (one line is one write,
// under a mutex, so lines never interleave).
class LineSocket {
 public:
  explicit LineSocket(int fd) : fd_(fd) {}
  ~LineSocket();
  LineSocket(const LineSocket&) = delete;
  LineSocket& operator=(const LineSocket&) = delete;

  int fd() const { return fd_; }

  // Sends `line` and "\n" (MSG_NOSIGNAL; bounded by a 1 s send timeout so a
  // stuck peer cannot hold a shutdown). False when the peer is gone.
  bool send_line(std::string_view line);

  enum class Read { kLine, kClosed, kTimeout, kTooLong };
  // The next line, without "\n", into `line`. deadline_s is on now_s()'s
  // clock; a negative one waits as long as it takes. kClosed (EOF or an
  // error, then `error` says which) and kTooLong end the conversation.
  Read read_line(std::string& line, double deadline_s, std::string& error);

 private:
  int fd_;
  std::string buffer_;  // bytes after the last line returned
  std::mutex send_mutex_;
};

}  // namespace ixfake::vllm
