//===- SendSlots.h - Buffers of pipeline sends, no more than needed -*- C++ -*-===//
//
// A pipeline send returns at once; the runtime keeps its buffer until the
// receiver has taken it and writes microbatch m into slot m % k. A sender
// that finds the slot still busy waits for the receiver, which may itself
// wait on the sender: too few slots deadlock, too many waste memory (61
// slots of 24 MiB for each of six send tensors on an interleaved GPT-3
// stage). The counts here are the fewest with which every stage's order
// runs to the end, found by simulating the step's message traffic.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_SENDSLOTS_H
#define CLEAVE_COST_MODEL_SENDSLOTS_H

#include "cleave/cost_model/PipelineSchedule.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <array>
#include <vector>

namespace cleave::cost {

/// slots[stage][chunk][0]: the slots of the activations a chunk's forward
/// sends to the next virtual stage; [1]: of the gradients its backward (B)
/// sends to the previous one. 0 where nothing is sent.
struct SendSlots {
  std::vector<std::vector<std::array<int, 2>>> slots;
  int at(int stage, int chunk, bool backward) const {
    return slots[stage][chunk][backward ? 1 : 0];
  }
};

/// Whether every stage runs `orders` (one per stage, all with `chunks`
/// chunks; virtual stage c * p + s is chunk c of stage s) to the end when
/// a pass waits, before it runs, for the send that last used its slot to
/// be received, and a receiving pass waits for its message to be sent.
bool runsToTheEnd(const std::vector<std::vector<PipelineSlot>> &orders,
                  int chunks, const SendSlots &counts);

/// Point-to-point messages between two ranks match in the order they are
/// posted: an error unless every stage receives each neighbour's messages
/// in the order that neighbour sends them. The simulation below matches
/// messages by microbatch and assumes this.
absl::Status
checkMessageOrder(const std::vector<std::vector<PipelineSlot>> &orders,
                  int chunks);

/// Lowers each count of `counts`, a run to the end of `orders` (whose
/// message order checkMessageOrder accepts), to the fewest with which the
/// run still ends: all to one where that runs (one simulation), else each
/// in turn by bisection (more slots never deadlock a run that completes)
/// while the others keep theirs, so the result is checked as a whole.
absl::StatusOr<SendSlots>
lowerSendSlots(const std::vector<std::vector<PipelineSlot>> &orders,
               int chunks, SendSlots counts);

/// The fewest slots per send tensor with which the schedule runs to the
/// end under `kind`, from a slot per microbatch the stage has in flight
/// (lowerSendSlots).
absl::StatusOr<SendSlots> minimalSendSlots(ScheduleKind kind, int stages,
                                           int microbatches, int chunks = 1);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_SENDSLOTS_H
