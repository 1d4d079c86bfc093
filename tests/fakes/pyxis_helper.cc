#include "pyxis_helper.h"

#include <grp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/base/unique_fd.h"

namespace ixfake::pyxis {
namespace {

constexpr size_t kMaxFds = 4;

// The helper child's side: become the user, run fn, send "K" (with fn's fds)
// or "E<error>", exit.
[[noreturn]] void HelperChild(int sock, const Job& job, const std::function<std::string(std::vector<int>&)>& fn) {
  std::vector<int> fds;
  std::string err;
  try {
    err = BecomeUser(job);
    if (err.empty()) err = fn(fds);
  } catch (...) {
    err = "internal error in the helper";
  }
  const std::string msg = err.empty() ? std::string("K") : "E" + err;
  iovec iov{const_cast<char*>(msg.data()), msg.size()};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  if (err.empty() && !fds.empty() && fds.size() <= kMaxFds) {
    mh.msg_control = ctl;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cm), fds.data(), sizeof(int) * fds.size());
  }
  const bool sent = sendmsg(sock, &mh, 0) >= 0;
  _exit(err.empty() && sent ? 0 : 1);
}

// The fds of the SCM_RIGHTS messages in mh, into *fds_out or closed.
void TakeFds(msghdr& mh, std::vector<int>* fds_out) {
  for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    std::vector<int> fds(count);
    std::memcpy(fds.data(), CMSG_DATA(cm), sizeof(int) * count);
    if (fds_out) {
      fds_out->insert(fds_out->end(), fds.begin(), fds.end());
    } else {
      for (int fd : fds) close(fd);
    }
  }
}

}  // namespace

std::string BecomeUser(const Job& job) {
  if (geteuid() == 0 && setgroups(job.gids.size(), job.gids.data()) != 0) return Errno("setgroups");
  if (setresgid(job.gid, job.gid, job.gid) != 0) return Errno("setresgid");
  if (setresuid(job.uid, job.uid, job.uid) != 0) return Errno("setresuid");
  return "";
}

std::string RunAsUser(const Job& job, const std::function<std::string(std::vector<int>&)>& fn,
                      std::vector<int>* fds_out) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return Errno("socketpair");
  ix::UniqueFd ours(sv[0]), theirs(sv[1]);
  const pid_t pid = fork();
  if (pid < 0) return Errno("fork");
  if (pid == 0) {
    ours.reset();
    HelperChild(theirs.get(), job, fn);
  }
  theirs.reset();
  char buf[4096];
  iovec iov{buf, sizeof(buf)};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  mh.msg_control = ctl;
  mh.msg_controllen = sizeof(ctl);
  ssize_t n;
  do n = recvmsg(ours.get(), &mh, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  ours.reset();
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  TakeFds(mh, fds_out);
  if (n <= 0) return "helper process ended without an answer (wait status " + std::to_string(status) + ")";
  if (buf[0] == 'K') return "";
  return std::string(buf + 1, static_cast<size_t>(n - 1));
}

}  // namespace ixfake::pyxis
