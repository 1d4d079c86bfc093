#include "submitter/sweep/slurm_output.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(SbatchParsable, IdWithAndWithoutCluster) {
  EXPECT_EQ(ParseSbatchParsable("1234;cluster\n").value(), 1234);
  EXPECT_EQ(ParseSbatchParsable("98765\n").value(), 98765);
  EXPECT_EQ(ParseSbatchParsable("  77;local  \r\n\n").value(), 77);
  for (const char* bad : {"", "\n", "Submitted batch job 12\n", ";cluster", "12a", "0", "-3"}) {
    Result<int64_t> r = ParseSbatchParsable(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(Contains(r.error().message, "expected a job id (ID or ID;CLUSTER)")) << r.error().message;
  }
}

TEST(SlurmStates, NamesCodesAndFinality) {
  EXPECT_EQ(ParseSlurmState("PENDING"), SlurmState::kPending);
  EXPECT_EQ(ParseSlurmState("RUNNING"), SlurmState::kRunning);
  EXPECT_EQ(ParseSlurmState("COMPLETING"), SlurmState::kCompleting);
  EXPECT_EQ(ParseSlurmState("OUT_OF_MEMORY"), SlurmState::kOutOfMemory);
  EXPECT_EQ(ParseSlurmState("NODE_FAIL"), SlurmState::kNodeFail);
  EXPECT_EQ(ParseSlurmState("CANCELLED by 1000"), SlurmState::kCancelled);
  EXPECT_EQ(ParseSlurmState("CANCELLED+"), SlurmState::kCancelled);
  EXPECT_EQ(ParseSlurmState("PD"), SlurmState::kPending);
  EXPECT_EQ(ParseSlurmState("CG"), SlurmState::kCompleting);
  EXPECT_EQ(ParseSlurmState("oom"), SlurmState::kOutOfMemory);
  EXPECT_EQ(ParseSlurmState("S"), SlurmState::kSuspended);
  EXPECT_EQ(ParseSlurmState("ST"), SlurmState::kStopped);
  EXPECT_EQ(ParseSlurmState("NEW_STATE_2030"), SlurmState::kUnknown);
  EXPECT_EQ(ParseSlurmState(""), SlurmState::kUnknown);
  for (SlurmState s : {SlurmState::kCompleted, SlurmState::kCancelled, SlurmState::kFailed, SlurmState::kTimeout,
                       SlurmState::kNodeFail, SlurmState::kOutOfMemory, SlurmState::kPreempted,
                       SlurmState::kBootFail, SlurmState::kDeadline}) {
    EXPECT_TRUE(Final(s)) << SlurmStateName(s);
  }
  for (SlurmState s : {SlurmState::kPending, SlurmState::kRunning, SlurmState::kCompleting, SlurmState::kSuspended,
                       SlurmState::kRequeued, SlurmState::kRequeueHold, SlurmState::kConfiguring,
                       SlurmState::kSpecialExit, SlurmState::kUnknown}) {
    EXPECT_FALSE(Final(s)) << SlurmStateName(s);
  }
  EXPECT_TRUE(Succeeded(SlurmState::kCompleted));
  EXPECT_FALSE(Succeeded(SlurmState::kFailed));
  // Every name round-trips.
  for (int i = 0; i <= static_cast<int>(SlurmState::kUnknown); ++i) {
    const SlurmState s = static_cast<SlurmState>(i);
    EXPECT_EQ(ParseSlurmState(SlurmStateName(s)), s) << SlurmStateName(s);
  }
}

TEST(TaskIds, ParseAndPrint) {
  EXPECT_EQ(ParseTaskId("1234").value(), (TaskId{1234, std::nullopt}));
  EXPECT_EQ(ParseTaskId("1234_7").value(), (TaskId{1234, 7}));
  EXPECT_EQ(ParseTaskId("1234_7").value().ToString(), "1234_7");
  EXPECT_EQ(ParseTaskId("1234").value().ToString(), "1234");
  for (const char* bad : {"", "_7", "1234_", "12x", "1234_[1-3]", "1234.0", "0"}) {
    EXPECT_FALSE(ParseTaskId(bad).ok()) << bad;
  }
}

TEST(ArrayIndices, RangesListsThrottlesAndSteps) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(ExpandArrayIndices("7").value(), V({7}));
  EXPECT_EQ(ExpandArrayIndices("[8-15%2]").value(), V({8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(ExpandArrayIndices("8-15%2").value(), V({8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(ExpandArrayIndices("[3,5,9-10]").value(), V({3, 5, 9, 10}));
  EXPECT_EQ(ExpandArrayIndices("1-7:2").value(), V({1, 3, 5, 7}));
  EXPECT_EQ(ExpandArrayIndices("[0-2,6-7%4]").value(), V({0, 1, 2, 6, 7}));
  for (const char* bad : {"", "[]", "[1-3", "3-1", "1-", "a", "1,,2", "1-7:0", "1%x", "0-99999999"}) {
    Result<V> r = ExpandArrayIndices(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(Contains(r.error().message, "array indices '")) << r.error().message;
  }
}

TEST(Squeue, PlainArrayAndPendingRangeLines) {
  const char* out =
      "1239|COMPLETED|None\n"
      "1240_0|RUNNING|None\n"
      "1240_1|FAILED|NonZeroExitCode\n"
      "1240_[8-11%2]|PENDING|JobArrayTaskLimit\n"
      "1240_[3,5]|PENDING|Dependency\n"
      "1241_[0-3]|PENDING|DependencyNeverSatisfied\n"
      "1242|PENDING|launch failed requeued held\n"
      "\n";
  Result<std::vector<QueueTask>> r = ParseSqueue(out);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& t = r.value();
  ASSERT_EQ(t.size(), 1u + 2u + 4u + 2u + 4u + 1u);
  EXPECT_EQ(t[0].id, (TaskId{1239, std::nullopt}));
  EXPECT_EQ(t[0].state, SlurmState::kCompleted);
  EXPECT_EQ(t[0].reason, "None");
  EXPECT_EQ(t[1].id.ToString(), "1240_0");
  EXPECT_EQ(t[1].state, SlurmState::kRunning);
  EXPECT_EQ(t[2].state, SlurmState::kFailed);
  EXPECT_EQ(t[2].reason, "NonZeroExitCode");
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(t[3 + i].id, (TaskId{1240, 8 + i}));
    EXPECT_EQ(t[3 + i].state, SlurmState::kPending);
    EXPECT_EQ(t[3 + i].state_name, "PENDING");
    EXPECT_EQ(t[3 + i].reason, "JobArrayTaskLimit");
  }
  EXPECT_EQ(t[7].id.ToString(), "1240_3");
  EXPECT_EQ(t[8].id.ToString(), "1240_5");
  EXPECT_EQ(t[9].reason, "DependencyNeverSatisfied");
  EXPECT_EQ(t[13].reason, "launch failed requeued held");

  EXPECT_TRUE(ParseSqueue("").value().empty());
  Result<std::vector<QueueTask>> bad = ParseSqueue("1239|COMPLETED|None\n1240 RUNNING\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.error().message, "squeue output line 2 '1240 RUNNING': expected ID|STATE|REASON"))
      << bad.error().message;
  EXPECT_FALSE(ParseSqueue("1240_[9-3]|PENDING|None\n").ok());
  EXPECT_FALSE(ParseSqueue("x_[1-3]|PENDING|None\n").ok());
}

TEST(ExitCodes, StatusAndSignal) {
  EXPECT_EQ(ParseSlurmExitCode("1:0").value(), (SlurmExitCode{1, 0}));
  EXPECT_EQ(ParseSlurmExitCode("0:9").value(), (SlurmExitCode{0, 9}));
  EXPECT_EQ(ParseSlurmExitCode("0:0").value(), (SlurmExitCode{0, 0}));
  EXPECT_FALSE(ParseSlurmExitCode("1").ok());
  EXPECT_FALSE(ParseSlurmExitCode("a:b").ok());
}

// As `scontrol -o show job` prints them (Slurm 22.05), paths with spaces.
const char* kPendingArray =
    "JobId=1241 ArrayJobId=1241 ArrayTaskId=0-7%2 ArrayTaskThrottle=2 JobName=ix-sw-20261202-160900-ab12-8k1k "
    "UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A Priority=4294901758 Nice=0 Account=(null) QOS=normal "
    "JobState=PENDING Reason=DependencyNeverSatisfied Dependency=afterok:1239(failed) Requeue=1 Restarts=0 "
    "BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=01:00:00 TimeMin=N/A "
    "SubmitTime=2026-12-02T16:09:01 EligibleTime=Unknown AccrueTime=Unknown StartTime=Unknown EndTime=Unknown "
    "Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-02T16:09:05 Scheduler=Main "
    "Partition=debug AllocNode:Sid=login1:4242 ReqNodeList=(null) ExcNodeList=(null) NodeList= NumNodes=1 "
    "NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,mem=1G,node=1,billing=1 Socks/Node=* "
    "NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=1G MinTmpDiskNode=0 Features=(null) "
    "DelayBoot=00:00:00 OverSubscribe=NO Contiguous=0 Licenses=(null) Network=(null) "
    "Command=/home/alice/my sweeps/sw-1/8k1k.sh --conc=8 X=1 WorkDir=/home/alice/my sweeps/sw-1 "
    "StdErr=/home/alice/my sweeps/sw-1/logs/%A_%a.err StdIn=/dev/null "
    "StdOut=/home/alice/my sweeps/sw-1/logs/%A_%a.out Power= ";
const char* kFailedTask =
    "JobId=1237 ArrayJobId=1235 ArrayTaskId=2 JobName=ix-8k1k UserId=alice(1000) GroupId=alice(1000) "
    "JobState=FAILED Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 ExitCode=1:0 "
    "Partition=debug NodeList=node1 Command=/s/8k1k.sh WorkDir=/s StdOut=/s/logs/1235_2.out Power=";
const char* kHeldJob =
    "JobId=1250 JobName=canary JobState=PENDING Reason=launch failed requeued held Dependency=(null) "
    "ExitCode=0:0 Command=/s/canary.sh WorkDir=/s";

TEST(Scontrol, FieldsWithSpacesAndEquals) {
  Result<std::map<std::string, std::string>> f = ParseScontrolFields(kPendingArray);
  ASSERT_TRUE(f.ok()) << f.error().message;
  const auto& m = f.value();
  EXPECT_EQ(m.at("Command"), "/home/alice/my sweeps/sw-1/8k1k.sh --conc=8 X=1");
  EXPECT_EQ(m.at("WorkDir"), "/home/alice/my sweeps/sw-1");
  EXPECT_EQ(m.at("StdErr"), "/home/alice/my sweeps/sw-1/logs/%A_%a.err");
  EXPECT_EQ(m.at("StdOut"), "/home/alice/my sweeps/sw-1/logs/%A_%a.out");
  EXPECT_EQ(m.at("TRES"), "cpu=1,mem=1G,node=1,billing=1");
  EXPECT_EQ(m.at("AllocNode:Sid"), "login1:4242");
  EXPECT_EQ(m.at("ReqB:S:C:T"), "0:0:*:*");
  EXPECT_EQ(m.at("NodeList"), "");
  EXPECT_EQ(m.at("Power"), "");
  EXPECT_EQ(m.at("MCS_label"), "N/A");
  EXPECT_EQ(m.at("Dependency"), "afterok:1239(failed)");
  EXPECT_EQ(m.count("X"), 0u);

  Result<std::map<std::string, std::string>> held = ParseScontrolFields(kHeldJob);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held.value().at("Reason"), "launch failed requeued held");
  EXPECT_EQ(held.value().at("Dependency"), "(null)");

  Result<std::map<std::string, std::string>> bad = ParseScontrolFields("slurm_load_jobs error: Invalid job id");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.error().message, "expected KEY=VALUE at 'slurm_load_jobs'")) << bad.error().message;
}

TEST(Scontrol, ShowJobRecordsOneLinerAndMultiLine) {
  const std::string out = std::string(kPendingArray) + "\n" + kFailedTask + "\n" + kHeldJob + "\n";
  Result<std::vector<JobInfo>> r = ParseScontrolShowJob(out);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r.value().size(), 3u);
  const JobInfo& pend = r.value()[0];
  EXPECT_EQ(pend.job_id, 1241);
  EXPECT_EQ(pend.array_job_id, 1241);
  EXPECT_EQ(pend.array_task_id, "0-7%2");
  EXPECT_EQ(pend.name, "ix-sw-20261202-160900-ab12-8k1k");
  EXPECT_EQ(pend.state, SlurmState::kPending);
  EXPECT_EQ(pend.reason, "DependencyNeverSatisfied");
  EXPECT_EQ(pend.dependency, "afterok:1239(failed)");
  ASSERT_NE(pend.Get("Partition"), nullptr);
  EXPECT_EQ(*pend.Get("Partition"), "debug");
  EXPECT_EQ(pend.Get("NoSuchField"), nullptr);
  const JobInfo& failed = r.value()[1];
  EXPECT_EQ(failed.job_id, 1237);
  EXPECT_EQ(failed.array_job_id, 1235);
  EXPECT_EQ(failed.array_task_id, "2");
  EXPECT_EQ(failed.state, SlurmState::kFailed);
  EXPECT_EQ(failed.exit_code, (SlurmExitCode{1, 0}));
  EXPECT_FALSE(r.value()[2].array_job_id);

  // Without -o: a record over several indented lines, blank line between.
  const char* multi =
      "JobId=1237 ArrayJobId=1235 ArrayTaskId=2 JobName=ix-8k1k\n"
      "   UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A\n"
      "   JobState=TIMEOUT Reason=TimeLimit Dependency=(null)\n"
      "   ExitCode=0:15\n"
      "   Command=/s/8k1k.sh\n"
      "   WorkDir=/s\n"
      "\n"
      "JobId=1238 JobName=x\n"
      "   JobState=COMPLETED Reason=None ExitCode=0:0\n";
  Result<std::vector<JobInfo>> m = ParseScontrolShowJob(multi);
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ(m.value().size(), 2u);
  EXPECT_EQ(m.value()[0].state, SlurmState::kTimeout);
  EXPECT_EQ(m.value()[0].exit_code, (SlurmExitCode{0, 15}));
  EXPECT_EQ(*m.value()[0].Get("Command"), "/s/8k1k.sh");
  EXPECT_EQ(*m.value()[0].Get("WorkDir"), "/s");
  EXPECT_EQ(m.value()[1].state, SlurmState::kCompleted);

  EXPECT_TRUE(ParseScontrolShowJob("").value().empty());
  EXPECT_FALSE(ParseScontrolShowJob("JobId=abc JobState=RUNNING\n").ok());
  EXPECT_FALSE(ParseScontrolShowJob("JobId=1 ExitCode=x\n").ok());
}

TEST(SlurmOutput, LinesAndLeadingJobIds) {
  EXPECT_EQ(OutputLines("a\r\nb\n\nc"), (std::vector<std::string_view>{"a", "b", "", "c"}));
  EXPECT_TRUE(OutputLines("").empty());
  EXPECT_EQ(LeadingJobId("1234"), 1234);
  EXPECT_EQ(LeadingJobId("1300_[0-3]"), 1300);
  EXPECT_EQ(LeadingJobId("1300_4.batch"), 1300);
  EXPECT_EQ(LeadingJobId("1301+0"), 1301);
  for (const char* bad : {"", "0", "x12", " 12", "_4", "1234567890123456789"}) {
    EXPECT_FALSE(LeadingJobId(bad).has_value()) << bad;
  }
}

TEST(SlurmOutput, MaxArraySizeFromTheConfig) {
  EXPECT_EQ(ParseMaxArraySize("Configuration data\nMaxArraySize            = 40001\nMaxJobCount = 10000\n"), 40001);
  EXPECT_FALSE(ParseMaxArraySize("MaxArraySize = 5\n").has_value());  // not at a line start
  EXPECT_FALSE(ParseMaxArraySize("x\nMaxArraySize = 0\n").has_value());
  EXPECT_FALSE(ParseMaxArraySize("x\nMaxJobCount = 7\n").has_value());
}

}  // namespace
}  // namespace ix
