//===- Interleave.h - Plans timed in turn in one launch ---------*- C++ -*-===//

#ifndef CLEAVE_TOOLS_CLEAVE_WORKER_INTERLEAVE_H
#define CLEAVE_TOOLS_CLEAVE_WORKER_INTERLEAVE_H

#include "Options.h"

namespace cleave::worker {

/// --interleave: K steps of every plan, one step of each in turn. Round r
/// starts with plan r mod N, so that no plan always follows the same one.
/// Rank 0 prints `plan I step K  loss L  time T ms` per step (I in the
/// order given, the positional plan first). Each step ends in an
/// all-reduce of its loss over every rank, so the next plan's step starts
/// with the ranks together, as a step of `cleave run` does.
/// Returns the exit code; errors end the job (fail).
int runInterleaved(const Options &options);

} // namespace cleave::worker

#endif // CLEAVE_TOOLS_CLEAVE_WORKER_INTERLEAVE_H
