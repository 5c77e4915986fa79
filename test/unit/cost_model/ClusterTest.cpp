//===- ClusterTest.cpp - Presets, overrides and the cluster file format ---===//
//
// The preset checks restate the datasheet figures the issue cites, so a
// typo in ClusterPresets.cpp fails here rather than skewing every plan.
//
//===----------------------------------------------------------------------===//

#include "cleave/cost_model/Cluster.h"

#include "gtest/gtest.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

using namespace cleave::cost;

namespace {

Cluster mustParse(const std::string &spec) {
  absl::StatusOr<Cluster> cluster = parseCluster(spec);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return cluster.ok() ? *cluster : Cluster();
}

std::string errorOf(const std::string &spec) {
  absl::StatusOr<Cluster> cluster = parseCluster(spec);
  EXPECT_FALSE(cluster.ok()) << spec << " parsed";
  return cluster.ok() ? "" : std::string(cluster.status().message());
}

std::string textErrorOf(const std::string &text) {
  absl::StatusOr<Cluster> cluster = parseClusterText(text, "cluster.txt");
  EXPECT_FALSE(cluster.ok()) << text << "\nparsed";
  return cluster.ok() ? "" : std::string(cluster.status().message());
}

void expectNear(double actual, double expected, double relative,
                const char *what) {
  EXPECT_NEAR(actual, expected, std::abs(expected) * relative) << what;
}

// Every field of two clusters, numbers within `relative`.
void expectSameCluster(const Cluster &a, const Cluster &b, double relative) {
  EXPECT_EQ(a.nodes, b.nodes);
  EXPECT_EQ(a.devicesPerNode, b.devicesPerNode);
  EXPECT_EQ(a.device.name, b.device.name);
  for (DType type : kAllDTypes)
    expectNear(a.device.peakFlops(type), b.device.peakFlops(type), relative,
               "peak");
  expectNear(a.device.memoryBytes, b.device.memoryBytes, relative, "memory");
  expectNear(a.device.memoryBandwidth, b.device.memoryBandwidth, relative,
             "memory bandwidth");
  EXPECT_EQ(a.intraNode.kind, b.intraNode.kind);
  expectNear(a.intraNode.bandwidth, b.intraNode.bandwidth, relative,
             "intra bandwidth");
  expectNear(a.intraNode.latency, b.intraNode.latency, relative,
             "intra latency");
  EXPECT_EQ(a.network.nicsPerNode, b.network.nicsPerNode);
  expectNear(a.network.nicBandwidth, b.network.nicBandwidth, relative,
             "nic bandwidth");
  expectNear(a.network.latency, b.network.latency, relative, "net latency");
  const Efficiency &x = a.efficiency, &y = b.efficiency;
  expectNear(x.gemmMax, y.gemmMax, relative, "gemm_max");
  expectNear(x.gemmHalfDim, y.gemmHalfDim, relative, "gemm_half_dim");
  expectNear(x.gemmExposedMemory, y.gemmExposedMemory, relative, "ridge");
  expectNear(x.memory, y.memory, relative, "memory efficiency");
  expectNear(x.ncclIntraNode, y.ncclIntraNode, relative, "nccl intra");
  expectNear(x.ncclInterNode, y.ncclInterNode, relative, "nccl inter");
  expectNear(x.kernelOverhead, y.kernelOverhead, relative, "kernel");
  expectNear(x.collectiveOverhead, y.collectiveOverhead, relative,
             "collective");
}

// The `index`-th ```ini block of a markdown file.
std::string iniBlock(const std::string &path, int index) {
  std::ifstream in(path);
  std::string line, block;
  int seen = -1;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line == "```ini") {
      inside = ++seen == index;
      continue;
    }
    if (inside && line == "```")
      return block;
    if (inside)
      block += line + "\n";
  }
  return block;
}

} // namespace

TEST(ClusterPresets, A100MatchesDatasheets) {
  for (const char *name : {"dgx-a100-80g", "dgx-a100-40g"}) {
    Cluster c = mustParse(name);
    EXPECT_EQ(c.devicesPerNode, 8);
    EXPECT_DOUBLE_EQ(c.device.peakBf16, 312e12);
    EXPECT_DOUBLE_EQ(c.device.peakFp16, 312e12);
    EXPECT_DOUBLE_EQ(c.device.peakTf32, 156e12);
    EXPECT_DOUBLE_EQ(c.device.peakFp32, 19.5e12);
    EXPECT_EQ(c.device.peakFp8, 0);
    // NVLink 3: 600 GB/s per GPU counting both directions.
    EXPECT_DOUBLE_EQ(2 * c.intraNode.bandwidth, 600e9);
    // nccl-tests inside a DGX A100: about 230 GB/s bus bandwidth.
    expectNear(c.intraNodeBusBandwidth(), 230e9, 0.01, "busbw");
    // 8 HDR NICs of 200 Gb/s, about 24 GB/s achieved each.
    EXPECT_EQ(c.network.nicsPerNode, 8);
    EXPECT_DOUBLE_EQ(c.network.nicBandwidth * 8, 200e9);
    expectNear(c.achievedNicBandwidth(), 24e9, 0.01, "nic");
  }
  Cluster big = mustParse("dgx-a100-80g");
  EXPECT_DOUBLE_EQ(big.device.memoryBytes, 80e9);
  EXPECT_DOUBLE_EQ(big.device.memoryBandwidth, 2.039e12);
  Cluster small = mustParse("dgx-a100-40g");
  EXPECT_DOUBLE_EQ(small.device.memoryBytes, 40e9);
  EXPECT_DOUBLE_EQ(small.device.memoryBandwidth, 1.555e12);
}

TEST(ClusterPresets, HopperMatchesDatasheets) {
  for (const char *name : {"dgx-h100", "hgx-h200"}) {
    Cluster c = mustParse(name);
    expectNear(c.device.peakBf16, 989e12, 0.001, "bf16");
    expectNear(c.device.peakFp8, 2 * 989e12, 0.001, "fp8");
    EXPECT_DOUBLE_EQ(2 * c.intraNode.bandwidth, 900e9);
    expectNear(c.intraNodeBusBandwidth(), 370e9, 0.01, "busbw");
    EXPECT_GE(c.achievedNicBandwidth(), 46e9);
    EXPECT_LE(c.achievedNicBandwidth(), 48e9);
    EXPECT_DOUBLE_EQ(c.network.nicBandwidth * 8, 400e9);
  }
  Cluster h100 = mustParse("dgx-h100");
  EXPECT_DOUBLE_EQ(h100.device.memoryBytes, 80e9);
  EXPECT_DOUBLE_EQ(h100.device.memoryBandwidth, 3.35e12);
  Cluster h200 = mustParse("hgx-h200");
  EXPECT_DOUBLE_EQ(h200.device.memoryBytes, 141e9);
  EXPECT_DOUBLE_EQ(h200.device.memoryBandwidth, 4.8e12);
  EXPECT_DOUBLE_EQ(h200.device.peakBf16, h100.device.peakBf16);
}

TEST(ClusterPresets, CpuLocalTakesItsRankCount) {
  Cluster c = mustParse("cpu-local,devices=4");
  EXPECT_EQ(c.nodes, 1);
  EXPECT_EQ(c.devicesPerNode, 4);
  EXPECT_EQ(c.numDevices(), 4);
  EXPECT_EQ(c.intraNode.kind, LinkKind::SharedMemory);
  EXPECT_GT(c.device.peakFp32, 0);
  EXPECT_EQ(c.device.peakBf16, 0); // the CPU kernels are fp32 only
}

TEST(ClusterPresets, EveryPresetValidatesAndRoundTrips) {
  std::vector<std::string> names = clusterPresetNames();
  EXPECT_GE(names.size(), 5u);
  for (const std::string &name : names) {
    absl::StatusOr<Cluster> preset = clusterPreset(name);
    ASSERT_TRUE(preset.ok()) << preset.status();
    EXPECT_EQ(preset->name, name);
    EXPECT_TRUE(validateCluster(*preset).ok());
    std::string text = formatCluster(*preset);
    absl::StatusOr<Cluster> back = parseClusterText(text, name + ".txt");
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
    EXPECT_EQ(back->name, name);
    expectSameCluster(*back, *preset, 1e-11);
  }
}

TEST(ClusterOverrides, NodesAndAnyFieldByKey) {
  Cluster c = mustParse("dgx-a100-80g,nodes=128");
  EXPECT_EQ(c.nodes, 128);
  EXPECT_EQ(c.numDevices(), 1024);
  EXPECT_EQ(c.nodeOf(1023), 127);
  EXPECT_DOUBLE_EQ(c.device.peakBf16, 312e12);

  Cluster h = mustParse("dgx-h100, network.nic_bandwidth = 200Gb/s,"
                        "device.memory=96 GiB,intra_node.latency=1.5us,"
                        "efficiency.memory=90%,name=custom");
  EXPECT_DOUBLE_EQ(h.network.nicBandwidth, 25e9);
  EXPECT_DOUBLE_EQ(h.device.memoryBytes, 96.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(h.intraNode.latency, 1.5e-6);
  EXPECT_DOUBLE_EQ(h.efficiency.memory, 0.9);
  EXPECT_EQ(h.name, "custom");

  // A key one section alone has needs no section.
  Cluster s = mustParse("dgx-h100,peak_bf16=1 PFLOP/s,nics_per_node=4");
  EXPECT_DOUBLE_EQ(s.device.peakBf16, 1e15);
  EXPECT_EQ(s.network.nicsPerNode, 4);
}

TEST(ClusterOverrides, ErrorsNameTheProblem) {
  std::string unknownPreset = errorOf("dgx-b200");
  EXPECT_NE(unknownPreset.find("unknown cluster preset 'dgx-b200'"),
            std::string::npos)
      << unknownPreset;
  EXPECT_NE(unknownPreset.find("dgx-a100-80g"), std::string::npos);

  std::string unknownKey = errorOf("dgx-a100-80g,nodez=2");
  EXPECT_NE(unknownKey.find("unknown key 'nodez'"), std::string::npos)
      << unknownKey;

  std::string badValue = errorOf("dgx-a100-80g,nodes=abc");
  EXPECT_NE(badValue.find("bad value 'abc' for key 'nodes'"), std::string::npos)
      << badValue;
  EXPECT_NE(errorOf("dgx-a100-80g,nodes=1.5").find("whole number"),
            std::string::npos);
  EXPECT_NE(errorOf("dgx-a100-80g,device.memory=5 us")
                .find("for key 'device.memory'"),
            std::string::npos);
  EXPECT_NE(errorOf("dgx-a100-80g,intra_node.kind=ethernet")
                .find("nvswitch, nvlink, pcie, shared-memory"),
            std::string::npos);

  std::string ambiguous = errorOf("dgx-a100-80g,latency=1us");
  EXPECT_NE(ambiguous.find("ambiguous key 'latency'"), std::string::npos);
  EXPECT_NE(ambiguous.find("network.latency"), std::string::npos);

  std::string range = errorOf("dgx-a100-80g,nodes=0");
  EXPECT_NE(range.find("nodes must be at least 1"), std::string::npos) << range;
  EXPECT_NE(errorOf("dgx-a100-80g,efficiency.memory=1.5")
                .find("efficiency.memory must be in (0, 1]"),
            std::string::npos);
  EXPECT_NE(errorOf("dgx-a100-80g,nodes").find("expected key=value"),
            std::string::npos);
  EXPECT_EQ(clusterPreset("nope").status().code(), absl::StatusCode::kNotFound);
  // A figure the device count does not use is still checked.
  EXPECT_NE(errorOf("cpu-local,devices=1,intra_node.bandwidth=-5GB/s")
                .find("intra_node.bandwidth must be 0 or more"),
            std::string::npos);
  EXPECT_NE(errorOf("dgx-h100,devices=1,network.nic_bandwidth=-1Gb/s")
                .find("network.nic_bandwidth must be 0 or more"),
            std::string::npos);
}

TEST(ClusterFile, DocumentedExampleIsThePreset) {
  std::string path = std::string(CLEAVE_SOURCE_DIR) + "/docs/cluster-format.md";
  std::string text = iniBlock(path, 0);
  ASSERT_FALSE(text.empty()) << "no ```ini block in " << path;
  absl::StatusOr<Cluster> parsed = parseClusterText(text, path);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  Cluster preset = mustParse("dgx-a100-80g,nodes=16");
  EXPECT_EQ(parsed->name, "dgx-a100-80g-x16");
  // The docs round 230/300 to 0.7667.
  expectSameCluster(*parsed, preset, 1e-3);
}

TEST(ClusterFile, PresetThenOverrides) {
  absl::StatusOr<Cluster> c =
      parseClusterText("preset = dgx-h100  # start here\n"
                       "nodes = 4\n"
                       "\n"
                       "[network]\n"
                       "nics_per_node = 4\n",
                       "h100x4.txt");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->nodes, 4);
  EXPECT_EQ(c->network.nicsPerNode, 4);
  EXPECT_DOUBLE_EQ(c->device.memoryBandwidth, 3.35e12);
}

TEST(ClusterFile, LoadsFromDiskAndFromSpec) {
  std::string path = ::testing::TempDir() + "cleave-cluster-test.txt";
  {
    std::ofstream out(path);
    out << "preset = dgx-a100-40g\nnodes = 2\n";
  }
  absl::StatusOr<Cluster> loaded = loadClusterFile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->nodes, 2);
  Cluster overridden = mustParse(path + ",nodes=3");
  EXPECT_EQ(overridden.nodes, 3);
  EXPECT_DOUBLE_EQ(overridden.device.memoryBytes, 40e9);
  std::remove(path.c_str());
  EXPECT_FALSE(loadClusterFile(path).ok());
}

TEST(ClusterFile, ErrorsNameFileLineAndKey) {
  std::string unknown =
      textErrorOf("preset = dgx-a100-80g\n\n[device]\nfoo = 1\n");
  EXPECT_NE(unknown.find("cluster.txt:4: unknown key 'device.foo'"),
            std::string::npos)
      << unknown;

  std::string bad =
      textErrorOf("preset = dgx-a100-80g\n[device]\nmemory = 80 Gs\n");
  EXPECT_NE(bad.find("cluster.txt:3: bad value '80 Gs' for key "
                     "'device.memory'"),
            std::string::npos)
      << bad;

  std::string section = textErrorOf("[gpu]\nname = x\n");
  EXPECT_NE(section.find("cluster.txt:1: unknown section '[gpu]'"),
            std::string::npos)
      << section;

  std::string twice =
      textErrorOf("preset = dgx-a100-80g\nnodes = 2\nnodes = 3\n");
  EXPECT_NE(twice.find("cluster.txt:3: key 'nodes' is set twice (first on "
                       "line 2)"),
            std::string::npos)
      << twice;

  std::string late = textErrorOf("nodes = 2\npreset = dgx-a100-80g\n");
  EXPECT_NE(late.find("cluster.txt:2: 'preset' must come before"),
            std::string::npos)
      << late;

  std::string noEquals = textErrorOf("preset = dgx-a100-80g\nnodes 2\n");
  EXPECT_NE(noEquals.find("cluster.txt:2: expected 'key = value'"),
            std::string::npos)
      << noEquals;

  std::string noValue = textErrorOf("nodes =\n");
  EXPECT_NE(noValue.find("cluster.txt:1: missing value for key 'nodes'"),
            std::string::npos)
      << noValue;

  // Without a preset the checks at the end name what is missing.
  std::string incomplete = textErrorOf("name = bare\nnodes = 1\n");
  EXPECT_NE(incomplete.find("device.peak_fp32 must be positive"),
            std::string::npos)
      << incomplete;
}

TEST(ClusterFile, FieldListCoversTheWriter) {
  std::string text = formatCluster(mustParse("dgx-a100-80g"));
  for (const ClusterFieldInfo &field : clusterFields()) {
    std::string name = field.key.substr(field.key.find('.') + 1);
    EXPECT_NE(text.find("\n" + name + " = "), std::string::npos) << field.key;
    EXPECT_FALSE(field.help.empty()) << field.key;
  }
}

TEST(ClusterPresets, CpuLocalRanksShareTheCores) {
  Cluster c = mustParse("cpu-local,devices=4,cores=2");
  EXPECT_EQ(c.coresPerNode, 2);
  EXPECT_DOUBLE_EQ(c.computeSharing(), 2.0);
  c.busyDevicesPerNode = 1.5; // most ranks idle: the cores suffice
  EXPECT_DOUBLE_EQ(c.computeSharing(), 1.0);
  EXPECT_DOUBLE_EQ(mustParse("cpu-local,devices=2,cores=8").computeSharing(),
                   1.0);
  // GPUs do not share: no cores.
  EXPECT_DOUBLE_EQ(mustParse("dgx-a100-80g").computeSharing(), 1.0);
}
