#!/usr/bin/env python3
"""A language model whose embedding weighs 300 MiB (1,228,800 x 64 fp32),
as real exports carry weights far over the importer's 1 MiB inline limit:
token ids -> Gather(embedding) -> MatMul(head) -> logits over 32 classes.

  large_weights.py text            the graph without the embedding, as
                                   protobuf text (protoc --encode makes it
                                   binary)
  large_weights.py append FILE     appends the embedding to FILE as one
                                   more initializer with raw_data (protobuf
                                   merges concatenated messages)
  large_weights.py external FILE DATA  the same, but as external data:
                                   appends an initializer naming DATA and
                                   writes the values there
  large_weights.py ids FILE        writes token ids for a global batch of
                                   4 (int64, all below 1000)
  large_weights.py expect FILE         checks that safetensors FILE holds
                                   the generated embedding at every row
                                   the ids do not name, and other values
                                   at those they do (one step trained
                                   them)

The values are a fixed formula of the element index (numpy), so a test can
check which rows a training step left untouched."""

import struct
import sys

VOCAB, HIDDEN, CLASSES, SEQ = 1228800, 64, 32, 8


def embedding():
    import numpy as np
    i = np.arange(VOCAB * HIDDEN, dtype=np.int64)
    return (((i * 7919) % 101 - 50) / 400.0).astype(np.float32).reshape(
        VOCAB, HIDDEN)


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, payload):
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def number(number_, value):
    return varint(number_ << 3) + varint(value)


def initializer(extra):
    """ModelProto { graph { initializer { dims, FLOAT, name, extra } } }."""
    tensor = (number(1, VOCAB) + number(1, HIDDEN) + number(2, 1) +
              field(8, b"embedding") + extra)
    return field(7, field(5, tensor))


def text():
    head = [((i * 31) % 17 - 8) / 64.0 for i in range(HIDDEN * CLASSES)]
    raw = struct.pack("<%df" % len(head), *head)
    escaped = "".join("\\%03o" % b for b in raw)
    print('ir_version: 8 opset_import { version: 17 } producer_name: "test"')
    print('graph { name: "large_weights"')
    print('  node { input: "embedding" input: "input_ids" output: "x" '
          'op_type: "Gather" }')
    print('  node { input: "x" input: "head" output: "logits" '
          'op_type: "MatMul" }')
    print('  initializer { dims: %d dims: %d data_type: 1 name: "head" '
          'raw_data: "%s" }' % (HIDDEN, CLASSES, escaped))
    print('  input { name: "input_ids" type { tensor_type { elem_type: 7 '
          'shape { dim { dim_param: "batch" } dim { dim_value: %d } } } } }'
          % SEQ)
    print('  output { name: "logits" type { tensor_type { elem_type: 1 '
          'shape { dim { dim_param: "batch" } dim { dim_value: %d } '
          'dim { dim_value: %d } } } } }' % (SEQ, CLASSES))
    print('}')


def main():
    mode = sys.argv[1]
    if mode == "text":
        text()
    elif mode == "append":
        with open(sys.argv[2], "ab") as f:
            f.write(initializer(field(9, embedding().tobytes())))
    elif mode == "external":
        data = sys.argv[3]
        import os
        with open(data, "wb") as f:
            f.write(b"\0" * 64)  # the values start at an offset
            f.write(embedding().tobytes())
        location = os.path.basename(data).encode()
        kv = lambda k, v: field(13, field(1, k) + field(2, v))
        extra = (kv(b"location", location) + kv(b"offset", b"64") +
                 kv(b"length", str(VOCAB * HIDDEN * 4).encode()) +
                 number(14, 1))  # data_location: EXTERNAL
        with open(sys.argv[2], "ab") as f:
            f.write(initializer(extra))
    elif mode == "ids":
        import numpy as np
        (np.arange(4 * SEQ, dtype=np.int64) * 37 % 1000).tofile(sys.argv[2])
    elif mode == "expect":
        import numpy as np
        from safetensors.numpy import load_file
        got = load_file(sys.argv[2])["embedding"]
        if got.shape != (VOCAB, HIDDEN):
            sys.exit("embedding has shape %s" % (got.shape,))
        want = embedding()
        used = np.unique(np.arange(4 * SEQ, dtype=np.int64) * 37 % 1000)
        untouched = np.ones(VOCAB, dtype=bool)
        untouched[used] = False
        if not np.array_equal(got[untouched], want[untouched]):
            sys.exit("rows no id names differ from the generated embedding")
        changed = int((got[used] != want[used]).any(axis=1).sum())
        if changed != len(used):
            sys.exit("only %d of the %d rows the ids name were trained" %
                     (changed, len(used)))
        print("embedding: %d rows as generated, the %d rows the ids name "
              "trained" % (int(untouched.sum()), changed))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
