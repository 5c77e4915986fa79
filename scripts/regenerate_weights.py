#!/usr/bin/env python3
"""Rebuild the external-data file of a corpus model whose weights are too
large to commit (test/models/real: ResNet-18 and DeepLab-V3, 44-45 MB each
against the corpus's 40 MB).

scripts/export_real_models.py exports such a model, then replaces each
large initializer by values drawn from NumPy's legacy RandomState (its
stream is frozen by NumPy's compatibility policy) with the mean and
standard deviation of what the exporter wrote, re-stores the file with
those tensors as external data, computes onnxruntime's outputs on it, and
records in models.json where each tensor lies, its seed and its moments,
and the data file's SHA-256. This script writes the same bytes again and
refuses (exit 1) when the hash differs, so a test never runs on weights
other than the ones onnxruntime's outputs were computed with.

    regenerate_weights.py MODELS_JSON NAME OUT_DIR

copies NAME.onnx from beside MODELS_JSON into OUT_DIR and writes its data
file there.
"""

import hashlib
import json
import os
import shutil
import sys

import numpy as np


def tensor_bytes(entry):
    values = np.random.RandomState(entry["seed"]).standard_normal(
        entry["length"] // 4)
    return (values * entry["std"] + entry["mean"]).astype("<f4").tobytes()


def regenerate(manifest, out_path):
    data = bytearray(manifest["bytes"])
    for entry in manifest["tensors"]:
        blob = tensor_bytes(entry)
        if len(blob) != entry["length"]:
            raise ValueError("%s: %d bytes generated, %d expected" %
                             (entry["name"], len(blob), entry["length"]))
        data[entry["offset"]:entry["offset"] + entry["length"]] = blob
    digest = hashlib.sha256(data).hexdigest()
    if digest != manifest["sha256"]:
        raise ValueError("%s: SHA-256 %s, expected %s" %
                         (out_path, digest, manifest["sha256"]))
    with open(out_path, "wb") as f:
        f.write(data)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[-4])
    models_json, name, out_dir = sys.argv[1:]
    with open(models_json) as f:
        manifest = json.load(f)[name]["regenerated"]
    src = os.path.join(os.path.dirname(models_json), name + ".onnx")
    os.makedirs(out_dir, exist_ok=True)
    shutil.copyfile(src, os.path.join(out_dir, name + ".onnx"))
    try:
        regenerate(manifest, os.path.join(out_dir, manifest["file"]))
    except ValueError as e:
        sys.exit("regenerate_weights.py: error: %s" % e)
    print("wrote %s (%d bytes, %d tensors regenerated)" %
          (manifest["file"], manifest["bytes"], len(manifest["tensors"])))


if __name__ == "__main__":
    main()
