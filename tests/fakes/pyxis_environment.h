// The container's environment in the Pyxis double: the image's
// /etc/environment, imported into each task's environment as Pyxis does
// (tests/fakes/README.md, the task_init row).
#pragma once

#include <string>
#include <utility>
#include <vector>

extern "C" {
#include <slurm/spank.h>
}

namespace ixfake::pyxis {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// NAME=value lines of an /etc/environment file ("export " and quotes around
// the value allowed; blank lines, # comments and bad names skipped); empty
// when the file cannot be read.
EnvList ReadEnvironment(const std::string& file);

// Unsets LANG, LANGUAGE and LC_ALL in the task, then sets every variable of
// `env` (overwriting) except those named in `keep_host` (--container-env).
std::string ImportEnvironment(spank_t sp, const EnvList& env, const std::vector<std::string>& keep_host);

}  // namespace ixfake::pyxis
