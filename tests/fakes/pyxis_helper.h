// The Pyxis double's helper processes: where Pyxis runs enroot as the job
// user, the double forks a child that becomes the job user entirely and runs
// a function there; its error, and file descriptors it opened (the
// container's namespaces), come back to slurmstepd over a socket.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "pyxis_types.h"

namespace ixfake::pyxis {

// The job user, entirely (uid, gid and groups). slurmstepd has only dropped
// its effective ids in user_init (real uid root): setres*id to the effective
// ids is allowed there; as root, the groups are set first.
std::string BecomeUser(const Job& job);

// Runs fn in a child process as the job user and waits for it; returns fn's
// error ("" on success). Up to 4 fds fn adds to its vector are passed back
// (SCM_RIGHTS, close-on-exec) into *fds_out, or closed when fds_out is null.
std::string RunAsUser(const Job& job, const std::function<std::string(std::vector<int>&)>& fn,
                      std::vector<int>* fds_out);

}  // namespace ixfake::pyxis
