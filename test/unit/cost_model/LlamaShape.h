//===- LlamaShape.h - Llama 3's shapes for the cost model's tests -*- C++ -*-===//
//
// A Llama 3 model at given dimensions: 8 key/value heads, SwiGLU, RoPE (no
// learned positions), an untied head, no dropout, vocabulary 128256.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_COST_MODEL_LLAMASHAPE_H
#define CLEAVE_TEST_UNIT_COST_MODEL_LLAMASHAPE_H

#include "cleave/cost_model/TransformerPlan.h"

namespace cleave::cost::shapes {

inline TransformerModel llama(int64_t layers, int64_t hidden, int64_t heads,
                              int64_t ffn, int64_t seq) {
  TransformerModel m;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kvHeads = 8;
  m.ffn = ffn;
  m.vocab = 128256;
  m.seq = seq;
  m.gatedMlp = true;
  m.learnedPositions = false;
  m.tiedEmbedding = false;
  m.dropout = false;
  return m;
}

} // namespace cleave::cost::shapes

#endif // CLEAVE_TEST_UNIT_COST_MODEL_LLAMASHAPE_H
