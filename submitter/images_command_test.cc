#include "submitter/images_command.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/base/file_text.h"
#include "submitter/sweep/container_args.h"
#include "submitter/testing_env.h"

namespace ix {
namespace {

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string Read(const std::string& path) {
  int err = 0;
  return ReadFileText(path, &err);
}

void WriteScript(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
}

TEST(ImportArgv, OneStepOnOneNodeFlockAroundEnroot) {
  EXPECT_EQ(ImportArgv("vllm/vllm-openai:v0.11.0", "/sq/vllm_vllm-openai_v0.11.0.sqsh", SubmitSettings{}),
            (std::vector<std::string>{"srun", "--nodes=1", "--ntasks=1", "--job-name=ix-images-import", "flock",
                                      "/sq/vllm_vllm-openai_v0.11.0.sqsh.lock", "enroot", "import", "-o",
                                      "/sq/vllm_vllm-openai_v0.11.0.sqsh", "docker://vllm/vllm-openai:v0.11.0"}));
  SubmitSettings s;
  s.partition = "gpu";
  s.account = "bench";
  s.time_limit = "2:00:00";
  const std::string image = "nvcr.io/nvidia/vllm:25.09-py3@sha256:ab";
  const std::string file = SquashPath("/sq", image);
  EXPECT_EQ(ImportArgv(image, file, s),
            (std::vector<std::string>{"srun", "--nodes=1", "--ntasks=1", "--job-name=ix-images-import",
                                      "--partition=gpu", "--account=bench", "--time=2:00:00", "flock",
                                      "/sq/nvcr.io_nvidia_vllm_25.09-py3_sha256_ab.sqsh.lock", "enroot", "import", "-o",
                                      "/sq/nvcr.io_nvidia_vllm_25.09-py3_sha256_ab.sqsh",
                                      "docker://nvcr.io#nvidia/vllm:sha256:ab"}));
}

// `images import` end to end with test doubles on PATH: an srun that runs
// its command here, an enroot that writes the URI it was given into the
// file (and fails for images named "*fail*", and when the file exists).
class ImagesImport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir() + "/images-" + std::to_string(::getpid())).lexically_normal();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/bin");
    std::filesystem::create_directories(dir_ + "/sq");
    WriteScript(dir_ + "/bin/srun",
                "#!/bin/bash\n"
                "echo \"srun $*\" >>\"$(dirname \"$0\")/../srun.log\"\n"
                "while [[ $1 == -* ]]; do shift; done\n"
                "exec \"$@\"\n");
    WriteScript(dir_ + "/bin/enroot",
                "#!/bin/bash\n"
                "[[ $1 == import && $2 == -o ]] || { echo \"enroot: usage\" >&2; exit 2; }\n"
                "[[ $4 == *fail* ]] && { echo \"enroot: cannot fetch $4\" >&2; exit 1; }\n"
                "[[ -e $3 ]] && { echo \"[ERROR] File already exists: $3\" >&2; exit 1; }\n"
                "echo \"progress: $4\"; echo \"$4\" >\"$3\"\n");
    path_ = dir_ + "/bin:" + std::string(std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `ixsubmit images ARGS` with the doubles first on PATH.
  int Run(const std::vector<std::string>& args) {
    ScopedEnv path("PATH", path_.c_str());
    ScopedEnv squash("IX_SQUASH_DIR", nullptr);
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    const int rc = RunImagesCommand(args);
    out_ = ::testing::internal::GetCapturedStdout();
    err_ = ::testing::internal::GetCapturedStderr();
    return rc;
  }

  std::string dir_, path_, out_, err_;
};

TEST_F(ImagesImport, ImportsWhatIsMissingOnceAndNamesWhatFailed) {
  const std::string sq = dir_ + "/sq";
  std::ofstream(sq + "/ubuntu.sqsh") << "there\n";
  const std::vector<std::string> args = {"import", "--squash-dir", sq, "vllm/vllm-openai:v0.11.0",
                                         "nvcr.io/nvidia/vllm:25.09-py3@sha256:ab", "ubuntu", "team/fail:1",
                                         "vllm/vllm-openai:v0.11.0"};
  EXPECT_EQ(Run(args), 1) << out_ << err_;
  EXPECT_EQ(Read(sq + "/vllm_vllm-openai_v0.11.0.sqsh"), "docker://vllm/vllm-openai:v0.11.0\n");
  EXPECT_EQ(Read(sq + "/nvcr.io_nvidia_vllm_25.09-py3_sha256_ab.sqsh"), "docker://nvcr.io#nvidia/vllm:sha256:ab\n");
  EXPECT_EQ(Read(sq + "/ubuntu.sqsh"), "there\n");
  EXPECT_TRUE(std::filesystem::exists(sq + "/vllm_vllm-openai_v0.11.0.sqsh.lock"));
  EXPECT_FALSE(std::filesystem::exists(sq + "/team_fail_1.sqsh"));
  EXPECT_TRUE(Contains(out_, "ubuntu: " + sq + "/ubuntu.sqsh is there")) << out_;
  EXPECT_TRUE(Contains(out_, "progress: docker://vllm/vllm-openai:v0.11.0")) << out_;  // enroot's output, live
  EXPECT_TRUE(Contains(out_, "4 image(s): 2 imported, 1 already there, 1 failed")) << out_;
  EXPECT_TRUE(Contains(err_, "ixsubmit images import: failed: team/fail:1 (srun exit status 1")) << err_;
  EXPECT_TRUE(Contains(err_, "enroot: cannot fetch docker://team/fail:1")) << err_;
  // The duplicate was imported once; the image already there not at all.
  int sruns = 0;
  for (char c : Read(dir_ + "/srun.log")) sruns += c == '\n';
  EXPECT_EQ(sruns, 3);

  // Again: nothing left to import but the failing image.
  EXPECT_EQ(Run({"import", "--squash-dir", sq, "vllm/vllm-openai:v0.11.0", "ubuntu"}), 0) << out_ << err_;
  EXPECT_TRUE(Contains(out_, "2 image(s): 0 imported, 2 already there, 0 failed")) << out_;
  EXPECT_EQ(Run({"list", "--squash-dir", sq, "ubuntu", "team/fail:1"}), 0);
  EXPECT_TRUE(Contains(out_, "present  ubuntu " + sq + "/ubuntu.sqsh")) << out_;
  EXPECT_TRUE(Contains(out_, "missing  team/fail:1 " + sq + "/team_fail_1.sqsh")) << out_;
}

TEST_F(ImagesImport, ASelectionImportsItsRowsImages) {
  const std::string sq = dir_ + "/sq";
  EXPECT_EQ(Run({"import", "--squash-dir", sq, "--dry-run", "--config-files",
                 IX_SOURCE_DIR "/recipes/examples/dsv41flash-b300-1k1k.yaml", "--config-keys",
                 "dsv41flash-fp4-b300-vllm"}),
            0)
      << out_ << err_;
  EXPECT_TRUE(Contains(out_, "vllm/vllm-openai:nightly: importing into " + sq +
                                 "/vllm_vllm-openai_nightly.sqsh: srun --nodes=1 --ntasks=1"))
      << out_;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/srun.log"));  // a dry run runs nothing
}

TEST_F(ImagesImport, BadInputIsMisuseNamingTheOption) {
  EXPECT_EQ(Run({"import", "vllm/vllm-openai:v0.11.0"}), 2);
  EXPECT_TRUE(Contains(err_, "no squash directory: give --squash-dir DIR or set IX_SQUASH_DIR")) << err_;
  EXPECT_EQ(Run({"import", "--squash-dir", dir_ + "/nope", "ubuntu"}), 2);
  EXPECT_TRUE(Contains(err_, "--squash-dir " + dir_ + "/nope: no such directory")) << err_;
  EXPECT_EQ(Run({"import", "--squash-dir", dir_ + "/sq", "Bad Image"}), 2);
  EXPECT_TRUE(Contains(err_, "argument IMAGE: 'Bad Image' is not a container image reference")) << err_;
  EXPECT_EQ(Run({"import", "--squash-dir", dir_ + "/sq"}), 2);
  EXPECT_TRUE(Contains(err_, "no images")) << err_;
  EXPECT_EQ(Run({"list", "--partition", "p", "ubuntu"}), 2);
  EXPECT_TRUE(Contains(err_, "argument --partition: only with import")) << err_;
  EXPECT_EQ(Run({"fetch"}), 2);
  EXPECT_TRUE(Contains(err_, "unknown subcommand 'fetch'; subcommands: list, import")) << err_;
  EXPECT_EQ(Run({"--help"}), 0);
  EXPECT_TRUE(Contains(out_, "flock FILE.lock enroot import -o FILE docker://IMAGE")) << out_;
}

}  // namespace
}  // namespace ix
