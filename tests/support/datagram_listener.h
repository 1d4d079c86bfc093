// DatagramListener: a unix datagram socket standing in for the node agent
// in tests of what sends to it (EventSink, TaskReporter): binds a path,
// receives one datagram at a time (2 s timeout) with the descriptor it
// carried.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace ix::test {

class DatagramListener {
 public:
  explicit DatagramListener(const std::string& path) : path_(path) {
    ::unlink(path.c_str());
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << path;
    timeval tv{2, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~DatagramListener() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  DatagramListener(const DatagramListener&) = delete;
  DatagramListener& operator=(const DatagramListener&) = delete;

  // The next datagram ("" after the timeout).
  std::string Receive() {
    int passed = -1;
    std::string text = Receive(&passed);
    if (passed >= 0) ::close(passed);
    return text;
  }
  // The next datagram and the descriptor it carried (-1: none; the caller
  // closes it).
  std::string Receive(int* passed_fd) {
    char buf[65536];
    iovec iov{buf, sizeof buf};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
    *passed_fd = -1;
    for (cmsghdr* c = n > 0 ? CMSG_FIRSTHDR(&msg) : nullptr; c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_type == SCM_RIGHTS) std::memcpy(passed_fd, CMSG_DATA(c), sizeof(int));
    }
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace ix::test
