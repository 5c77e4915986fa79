#!/usr/bin/env python3
"""Export the real-model corpus: Hugging Face models as today's PyTorch
exports them, with their weights, and onnxruntime's outputs for fixed
inputs, for the tests that take each through `cleave compile -o`, `run
--check` and an inference plan compared with onnxruntime
(test/Runtime/real-models.test).

Pinned versions, from PyPI (test-model exports only: cleave never imports
them):

    python3 -m venv /tmp/export && /tmp/export/bin/pip install \\
        torch==2.15.0 torchvision==0.29.2 transformers==5.23.0 \\
        onnxscript==0.7.2 onnx==1.23.2 onnxruntime==1.31.1 pillow
    /tmp/export/bin/python scripts/export_real_models.py --out test/models/real

GPT-2, LLaMA and Qwen2 (grouped-query attention), BERT (masked LM), ViT,
Whisper's encoder, and torchvision's MobileNet-V3 (small), the last also by
the TorchScript exporter. Each model is a small configuration of the real architecture with its
weights (initialised from a fixed seed: nothing is downloaded), exported by
the default `torch.onnx.export` call (the dynamo exporter, opset 20 in
PyTorch 2.15, weights as external data in NAME.onnx.data, at least one
over 1 MiB). Beside each: NAME.<input>.bin (the fixed inputs, raw) and
NAME.ort.bin (onnxruntime's first output, fp32). models.json lists them
with their inputs, shapes and the versions that wrote them.

LLaMA is also exported at opset 23 (its attention as ONNX's Attention
op, with a boolean mask and grouped-query heads). GPT-2 and LLaMA are also
exported by the TorchScript exporter
(dynamo=False, opset 17, weights inside the file). It cannot convert the
`torch.diff` in transformers 5.23's packed-sequence detection
(masking_utils.find_packed_sequence_indices, "aten::diff"), which under
tracing always runs; the export replaces it by what it returns in eager
mode for unpacked rows (None: one sequence per row), as a user exporting
these models with that exporter must.

torchvision's ResNet-18 (by both exporters) and DeepLab-V3 (MobileNet-V3
backbone) hold 11 M weights each, 44-45 MB, more than the corpus's 40 MB
on their own; the two MobileNet-V3 exports 6 MB each. Their large
initializers (128 KiB and over) are replaced
after the export by values regenerate_weights.py draws again from a seed
(each tensor keeps the mean and deviation the exporter's had), so only the
graph and the small tensors are committed; models.json records the seeds,
offsets and the data file's SHA-256, and onnxruntime's outputs are
computed on exactly those weights.

Mixtral is exported with transformers' batched experts
(experts_implementation="batched_mm"); its eager default routes tokens
with NonZero, which the default exporter fails to convert and whose output
shape depends on the data. T5 (encoder-decoder, relative position buckets)
is exported by both: the default (dynamo) exporter fails on transformers
5.23's T5 with its default SDPA attention in its decomposition step (a
`view` of the transposed attention output), in PyTorch, before any ONNX is
written, so t5_dynamo is built with attn_implementation="eager" (the
attention as matmuls and softmax, which it exports).
"""

import argparse
import hashlib
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torchvision
import transformers
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import regenerate_weights  # noqa: E402


class LogitsOnly(torch.nn.Module):
    """The model's logits as the one output (no cache, no dict)."""

    def __init__(self, model, names):
        super().__init__()
        self.model = model
        self.names = names

    def forward(self, *inputs):
        kwargs = dict(zip(self.names, inputs))
        if "input_ids" in self.names:
            kwargs["use_cache"] = False
        return self.model(**kwargs).logits


def gpt2():
    cfg = transformers.GPT2Config(vocab_size=8192, n_positions=64, n_embd=64,
                                  n_layer=2, n_head=4)
    return transformers.GPT2LMHeadModel(cfg), ["input_ids"], cfg.vocab_size


def llama():
    cfg = transformers.LlamaConfig(vocab_size=4096, hidden_size=64,
                                   intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4,
                                   num_key_value_heads=2,
                                   max_position_embeddings=64)
    return (transformers.LlamaForCausalLM(cfg), ["input_ids", "attention_mask"],
            cfg.vocab_size)


def qwen2():
    cfg = transformers.Qwen2Config(vocab_size=4096, hidden_size=64,
                                   intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4,
                                   num_key_value_heads=2,
                                   max_position_embeddings=64)
    return (transformers.Qwen2ForCausalLM(cfg), ["input_ids", "attention_mask"],
            cfg.vocab_size)


def mixtral():
    # The batched experts (each token's top-k expert weights gathered, then
    # batched products): the eager default routes with NonZero, whose
    # output shape depends on the data.
    cfg = transformers.MixtralConfig(vocab_size=4096, hidden_size=64,
                                     intermediate_size=128,
                                     num_hidden_layers=2,
                                     num_attention_heads=4,
                                     num_key_value_heads=2,
                                     max_position_embeddings=64,
                                     num_local_experts=4,
                                     num_experts_per_tok=2,
                                     experts_implementation="batched_mm")
    return (transformers.MixtralForCausalLM(cfg),
            ["input_ids", "attention_mask"], cfg.vocab_size)


def t5():
    cfg = transformers.T5Config(vocab_size=4096, d_model=64, d_kv=16,
                                d_ff=128, num_layers=2, num_decoder_layers=2,
                                num_heads=4, decoder_start_token_id=0)
    return (transformers.T5ForConditionalGeneration(cfg),
            ["input_ids", "attention_mask", "decoder_input_ids"],
            cfg.vocab_size)


def t5_eager():
    """T5 with its attention written out (attn_implementation="eager"): the
    default exporter fails on the SDPA path (above); this one it takes."""
    model, names, vocab = t5()
    return (transformers.T5ForConditionalGeneration._from_config(
        model.config, attn_implementation="eager"), names, vocab)


def bert():
    cfg = transformers.BertConfig(vocab_size=4096, hidden_size=64,
                                  intermediate_size=128, num_hidden_layers=2,
                                  num_attention_heads=4,
                                  max_position_embeddings=64)
    return (transformers.BertForMaskedLM(cfg), ["input_ids", "attention_mask"],
            cfg.vocab_size)


def vit():
    cfg = transformers.ViTConfig(image_size=32, patch_size=8, hidden_size=64,
                                 intermediate_size=128, num_hidden_layers=2,
                                 num_attention_heads=4, num_labels=10)
    return (transformers.ViTForImageClassification(cfg), ["pixel_values"], 0)


class WhisperEncoder(torch.nn.Module):
    """Whisper's audio encoder: log-mel features to hidden states."""

    def __init__(self, cfg):
        super().__init__()
        self.encoder = transformers.WhisperModel(cfg).get_encoder()

    def forward(self, input_features):
        return Output(self.encoder(input_features=input_features)
                      .last_hidden_state)


class Output:
    def __init__(self, logits):
        self.logits = logits


def whisper():
    cfg = transformers.WhisperConfig(
        vocab_size=512, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        decoder_start_token_id=1, num_mel_bins=16, encoder_layers=2,
        encoder_attention_heads=4, decoder_layers=1,
        decoder_attention_heads=4, d_model=64, encoder_ffn_dim=128,
        decoder_ffn_dim=128, max_source_positions=16)
    return WhisperEncoder(cfg), ["input_features"], 0


class Classifier(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, image):
        return Output(self.model(image))


def mobilenet():
    return (Classifier(torchvision.models.mobilenet_v3_small(
        weights=None, num_classes=10)), ["image"], 0)


def resnet():
    return (Classifier(torchvision.models.resnet18(weights=None,
                                                   num_classes=10)),
            ["image"], 0)


class Segmenter(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, image):
        return Output(self.model(image)["out"])


def deeplab():
    return (Segmenter(torchvision.models.segmentation
                      .deeplabv3_mobilenet_v3_large(
                          weights=None, weights_backbone=None, num_classes=4,
                          aux_loss=False)), ["image"], 0)


MODELS = {"gpt2_dynamo": gpt2, "llama_dynamo": llama, "qwen2_dynamo": qwen2,
          "mixtral_dynamo": mixtral, "bert_dynamo": bert, "vit_dynamo": vit,
          "whisper_encoder_dynamo": whisper, "t5_dynamo": t5_eager,
          "mobilenet_v3_dynamo": mobilenet,
          # The TorchScript exporter (dynamo=False, opset 17).
          "gpt2_torchscript": gpt2, "llama_torchscript": llama,
          "t5_torchscript": t5,
          # The default exporter at opset 23: scaled dot-product attention
          # as the Attention op, RMSNorm as RMSNormalization.
          "llama_opset23": llama,
          "mobilenet_v3_torchscript": mobilenet,
          "resnet18_dynamo": resnet, "resnet18_torchscript": resnet,
          "deeplabv3_dynamo": deeplab}
# Weights regenerated from seeds rather than committed (see above).
REGENERATED = {"resnet18_dynamo", "resnet18_torchscript", "deeplabv3_dynamo",
               "mobilenet_v3_dynamo", "mobilenet_v3_torchscript", "t5_dynamo",
               "t5_torchscript"}
LARGE = 128 * 1024
# Models added since the corpus neared its 40 MB budget: their tensors
# from this size up are regenerated too (T5's 32 KB projections).
SMALLER = {"t5_dynamo": 16 * 1024, "t5_torchscript": 16 * 1024}


def regenerate_large(name, path):
    """Replaces the model's large initializers by seeded values, stores them
    as external data and returns regenerate_weights.py's manifest."""
    model = onnx.load(path)
    data_file = name + ".onnx.data"
    data_path = os.path.join(os.path.dirname(path), data_file)
    if os.path.exists(data_path):
        os.remove(data_path)
    seeds = {}
    large = SMALLER.get(name, LARGE)
    for init in model.graph.initializer:
        values = numpy_helper.to_array(init)
        if values.nbytes < large:
            continue
        if values.dtype != np.float32:
            raise ValueError("%s: %s initializer over %d bytes" %
                             (init.name, values.dtype, large))
        entry = {"seed": len(seeds) + 1, "mean": float(values.mean()),
                 "std": float(values.std()), "length": values.nbytes}
        regenerated = np.frombuffer(regenerate_weights.tensor_bytes(entry),
                                    "<f4").reshape(values.shape)
        init.CopyFrom(numpy_helper.from_array(regenerated, init.name))
        seeds[init.name] = entry
    onnx.save_model(model, path, save_as_external_data=True,
                    all_tensors_to_one_file=True, location=data_file,
                    size_threshold=large)
    tensors = []
    for init in onnx.load(path, load_external_data=False).graph.initializer:
        if init.data_location != onnx.TensorProto.EXTERNAL:
            continue
        where = {e.key: e.value for e in init.external_data}
        entry = dict(seeds[init.name], name=init.name,
                     offset=int(where.get("offset", 0)))
        if int(where["length"]) != entry["length"]:
            raise ValueError(init.name + ": stored length differs")
        tensors.append(entry)
    with open(data_path, "rb") as f:
        data = f.read()
    return {"file": data_file, "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "tensors": tensors}
BATCH, SEQ = 2, 16


def export(name, out_dir, info):
    torch.manual_seed(0)
    model, names, vocab = MODELS[name]()
    model.eval()
    inputs = {}
    if "input_ids" in names:
        inputs["input_ids"] = (np.arange(BATCH * SEQ, dtype=np.int64).reshape(
            BATCH, SEQ) * 97) % vocab
    if "decoder_input_ids" in names:
        inputs["decoder_input_ids"] = (np.arange(
            BATCH * SEQ, dtype=np.int64).reshape(BATCH, SEQ) * 31) % vocab
    if "attention_mask" in names:
        inputs["attention_mask"] = np.ones((BATCH, SEQ), dtype=np.int64)
    if "input_features" in names:
        inputs["input_features"] = np.random.default_rng(1).standard_normal(
            (BATCH, 16, 32)).astype(np.float32)
    if "image" in names:
        inputs["image"] = np.random.default_rng(2).standard_normal(
            (BATCH, 3, 64, 64)).astype(np.float32)
    if "pixel_values" in names:
        inputs["pixel_values"] = np.random.default_rng(0).standard_normal(
            (BATCH, 3, 32, 32)).astype(np.float32)
    path = os.path.join(out_dir, name + ".onnx")
    args = tuple(torch.from_numpy(inputs[n]) for n in names)
    torchscript = name.endswith("_torchscript")
    packed = transformers.masking_utils.find_packed_sequence_indices
    if torchscript:
        transformers.masking_utils.find_packed_sequence_indices = (
            lambda position_ids: None)
    options = ({"dynamo": False, "opset_version": 17} if torchscript else
               {"opset_version": 23} if name.endswith("_opset23") else {})
    torch.onnx.export(LogitsOnly(model, names), args, path,
                      input_names=names, output_names=["logits"], **options)
    transformers.masking_utils.find_packed_sequence_indices = packed
    onnx.checker.check_model(path)
    manifest = regenerate_large(name, path) if name in REGENERATED else None
    for n, v in inputs.items():
        v.tofile(os.path.join(out_dir, "%s.%s.bin" % (name, n)))
    logits = ort.InferenceSession(path).run(None, inputs)[0]
    logits.astype(np.float32).tofile(os.path.join(out_dir, name + ".ort.bin"))
    loaded = onnx.load(path, load_external_data=False)
    info[name] = {
        "exporter": ("torch.onnx.export(dynamo=False) (TorchScript)"
                     if torchscript else
                     "torch.onnx.export(opset_version=23) (dynamo)"
                     if name.endswith("_opset23") else
                     "torch.onnx.export (default: dynamo)"),
        "opset": [o.version for o in loaded.opset_import if o.domain == ""][0],
        "inputs": {n: list(inputs[n].shape) for n in names},
        "logits": list(logits.shape),
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    if manifest:
        # Not committed: regenerate_weights.py writes it again.
        os.remove(os.path.join(out_dir, manifest["file"]))
        info[name]["regenerated"] = manifest


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--state-dicts", action="store_true",
                        help="only record each model's state_dict names "
                             "and shapes in models.json (no export): the "
                             "keys `cleave checkpoint export` must write "
                             "for load_state_dict(strict=True)")
    parser.add_argument("--only", nargs="*", default=None,
                        help="export these models only; models.json keeps "
                             "the others' entries")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    info = {"versions": {"torch": torch.__version__,
                         "torchvision": torchvision.__version__,
                         "transformers": transformers.__version__,
                         "onnx": onnx.__version__,
                         "onnxruntime": ort.__version__}}
    listed = os.path.join(args.out, "models.json")
    if (args.only or args.state_dicts) and os.path.exists(listed):
        with open(listed) as f:
            kept = json.load(f)
        if kept.get("versions") != info["versions"]:
            sys.exit("--only: models.json was written with other versions "
                     "%s; export every model again" % kept.get("versions"))
        info = kept
    for name in (args.only or MODELS):
        if args.state_dicts:
            if name in info:
                torch.manual_seed(0)
                model = MODELS[name]()[0]
                info[name]["state_dict"] = {
                    k: list(v.shape) for k, v in model.state_dict().items()}
            continue
        export(name, args.out, info)
    with open(os.path.join(args.out, "models.json"), "w") as f:
        json.dump(info, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
