#include "spank_plugin/step_nodes.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

TEST(StepNodesTest, FirstHostOfSlurmHostLists) {
  EXPECT_EQ(FirstHost("ixn1").value(), "ixn1");
  EXPECT_EQ(FirstHost("ixn[1-2]").value(), "ixn1");
  EXPECT_EQ(FirstHost("ixn[2,5-7],gpu1").value(), "ixn2");
  EXPECT_EQ(FirstHost("rack1-n[003-004]").value(), "rack1-n003");
  EXPECT_EQ(FirstHost("gpu-a,gpu-b").value(), "gpu-a");
  EXPECT_EQ(FirstHost("n[1-2]-ib").value(), "n1-ib");
}

TEST(StepNodesTest, FirstHostRefusesMalformedLists) {
  for (const char* bad : {"", "[1-2]", "n[1-2", "n1-2]", "n[x]", "n[[1]]"}) {
    Result<std::string> r = FirstHost(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("SLURM_STEP_NODELIST"), std::string::npos) << bad;
  }
}

TEST(StepNodesTest, ArmNodesMustMatchTheStep) {
  Arm multi;
  multi.name = "dep16";
  multi.nodes = 2;
  EXPECT_TRUE(CheckArmNodes(multi, 2));
  Status s = CheckArmNodes(multi, 1);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("srun -N2 --ntasks-per-node=1"), std::string::npos);
  Arm single;
  single.name = "tp4";
  EXPECT_TRUE(CheckArmNodes(single, 1));
  s = CheckArmNodes(single, 3);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("srun -N1"), std::string::npos);
}

TEST(StepNodesTest, StepPortsComeFromTheReservationInOrder) {
  const PortRange broker{20000, 29999};
  Result<PortList> p = StepPortsFromReservation({"PORT", "DP_RPC_PORT"}, std::string("30010-30011"), broker);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p.value(), (PortList{{"PORT", 30010}, {"DP_RPC_PORT", 30011}}));
  p = StepPortsFromReservation({"MASTER_PORT"}, std::string("30004,30007"), broker);
  ASSERT_TRUE(p);
  EXPECT_EQ(p.value(), (PortList{{"MASTER_PORT", 30004}}));
  EXPECT_TRUE(StepPortsFromReservation({}, std::nullopt, broker));  // nothing needed
}

TEST(StepNodesTest, StepPortErrorsSayWhatToChange) {
  const PortRange broker{20000, 29999};
  const auto message = [&](const std::optional<std::string>& resv) {
    Result<PortList> r = StepPortsFromReservation({"PORT", "DP_RPC_PORT"}, resv, broker);
    return r ? std::string("ok") : r.error().message;
  };
  EXPECT_NE(message(std::nullopt).find("MpiParams=ports="), std::string::npos);
  EXPECT_NE(message(std::string("30010")).find("--resv-ports=2"), std::string::npos);
  EXPECT_NE(message(std::string("80,81")).find("below 1024"), std::string::npos);
  EXPECT_NE(message(std::string("20010-20011")).find("port_range="), std::string::npos);
  EXPECT_NE(message(std::string("x-y")).find("SLURM_STEP_RESV_PORTS"), std::string::npos);
}

}  // namespace
}  // namespace ix
