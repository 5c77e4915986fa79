//===- Job.cpp - This rank in the job: who it is, how it fails ------------===//

#include "Job.h"

#include "cleave/runtime/comm/MpiCommunicator.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace cleave::worker {

namespace {
int gRank = 0;
int gSize = 1;
} // namespace

int rank() { return gRank; }
int worldSize() { return gSize; }
void setWorld(int rank, int size) {
  gRank = rank;
  gSize = size;
}

void fail(const std::string &message) {
  std::fprintf(stderr, "cleave-worker: rank %d: %s\n", gRank, message.c_str());
  std::fflush(stderr);
  if (gSize > 1)
    comm::mpiAbort(1);
  comm::mpiFinalize();
  std::exit(1);
}

int endTogether(const std::string &message, int code) {
  if (gRank == 0)
    std::fprintf(stderr, "cleave-worker: %s\n", message.c_str());
  comm::mpiFinalize();
  return code;
}

int64_t nowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

comm::MeshInfo meshOf(const plan::Plan &plan) {
  comm::MeshInfo mesh;
  for (const plan::MeshAxis &axis : plan.mesh().axes()) {
    mesh.axisNames.push_back(axis.name());
    mesh.axisSizes.push_back(axis.size());
  }
  mesh.coords.assign(plan.ranks(gRank).coords().begin(),
                     plan.ranks(gRank).coords().end());
  return mesh;
}

} // namespace cleave::worker
