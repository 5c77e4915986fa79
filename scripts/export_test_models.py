#!/usr/bin/python3
"""Export the small ONNX graphs that cleave's importer and planner tests use.

Run with Debian's interpreter, which is where python3-torch (1.13),
python3-torchvision (0.14) and python3-onnx (1.12) live:

    /usr/bin/python3 scripts/export_test_models.py --out test/models

The output is deterministic (fixed seeds, no downloaded weights), so
re-running it on the same package versions reproduces the committed files.

Two families of files are written:

* resnet50, vit_b_16, gpt_decoder: realistic graphs for planning.  Planning
  only needs shapes, so their initializers are moved to external data and the
  .data file is deleted; the graph file keeps every initializer's name, dtype
  and dims (and a dangling external-data reference) but no bytes.
* tiny_mlp_opset9, tiny_gpt_weights: tiny graphs whose weights stay inline so
  that tests can check numerics against PyTorch's own output.
"""

import argparse
import collections
import io
import json
import math
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision

# Graph files for the weight-less models are committed; keep them small.
MAX_GRAPH_BYTES = 1 << 20


# ---------------------------------------------------------------------------
# GPT-style decoder
# ---------------------------------------------------------------------------
# Written with plain torch.nn (no transformers, no nn.MultiheadAttention) so the
# exported graph shows the attention as explicit MatMul/Softmax/Where, which is
# what the planner has to reason about.  Reshapes deliberately use x.size() so
# that, with symbolic batch/seq, the exporter emits the runtime
# Shape/Gather/Unsqueeze/Concat -> Reshape chains the importer must handle.


class CausalSelfAttention(nn.Module):
    def __init__(self, hidden, heads, max_seq):
        super().__init__()
        assert hidden % heads == 0
        self.heads = heads
        # A Python float, not derived from x.size(): the scale is a constant
        # of the architecture and tracing it from a tensor only adds warnings.
        self.scale = 1.0 / math.sqrt(hidden // heads)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        # Non-persistent: the mask is derived, not model state, so it stays
        # out of state_dict (the exporter then emits it as a Constant node).
        mask = torch.tril(torch.ones(max_seq, max_seq, dtype=torch.bool))
        self.register_buffer("causal_mask", mask.view(1, 1, max_seq, max_seq),
                             persistent=False)

    def forward(self, x):
        b, t, c = x.size()
        head_dim = c // self.heads
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, head_dim).transpose(1, 2)
        k = k.view(b, t, self.heads, head_dim).transpose(1, 2)
        v = v.view(b, t, self.heads, head_dim).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        att = att.masked_fill(~self.causal_mask[:, :, :t, :t], float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, hidden, heads, max_seq):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = CausalSelfAttention(hidden, heads, max_seq)
        self.ln2 = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(
            nn.Linear(hidden, 4 * hidden),
            nn.GELU(),
            nn.Linear(4 * hidden, hidden),
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class GPTDecoder(nn.Module):
    def __init__(self, layers, hidden, heads, vocab, max_seq):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, hidden)
        self.pos_emb = nn.Embedding(max_seq, hidden)
        self.blocks = nn.ModuleList(
            [Block(hidden, heads, max_seq) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        # Tied LM head: parameters() yields the shared tensor once, so the
        # PyTorch parameter count does not include a separate head matrix.
        self.lm_head.weight = self.tok_emb.weight
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(m):
        # GPT-2 style small init keeps the tiny model's reference logits in a
        # sane range (default Embedding init is N(0, 1)).
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class TinyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return torch.softmax(self.fc2(self.relu(self.fc1(x))), dim=-1)


# ---------------------------------------------------------------------------
# Export helpers
# ---------------------------------------------------------------------------


def export_to_proto(model, args, opset, input_names, output_names,
                    dynamic_axes=None):
    # Export to memory so the checker sees the complete model (with weights)
    # before anything is moved out or dropped.
    buf = io.BytesIO()
    torch.onnx.export(
        model, args, buf,
        opset_version=opset,
        input_names=input_names,
        output_names=output_names,
        dynamic_axes=dynamic_axes,
        do_constant_folding=True,
        export_params=True,
    )
    proto = onnx.load_model_from_string(buf.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    return proto


def save_without_weights(proto, path, max_bytes=MAX_GRAPH_BYTES):
    data_name = os.path.basename(path) + ".data"
    data_path = os.path.join(os.path.dirname(path), data_name)
    # onnx appends to an existing .data file, which would shift offsets and
    # make the graph file depend on leftovers from an earlier run.
    if os.path.exists(data_path):
        os.remove(data_path)
    onnx.save_model(proto, path, save_as_external_data=True,
                    all_tensors_to_one_file=True, location=data_name,
                    size_threshold=0)
    os.remove(data_path)
    size = os.path.getsize(path)
    if size >= max_bytes:
        sys.exit(f"{path}: graph file is {size} bytes, limit {max_bytes}")


def save_inline(proto, path):
    onnx.save_model(proto, path)


def dim_value(d):
    if d.HasField("dim_value"):
        return d.dim_value
    if d.HasField("dim_param"):
        return d.dim_param
    return None


def describe_values(values):
    out = []
    for v in values:
        tt = v.type.tensor_type
        out.append({
            "name": v.name,
            "shape": [dim_value(d) for d in tt.shape.dim],
            # numpy spelling (float32, int64), same as the reference entries.
            "dtype": onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tt.elem_type].name,
        })
    return out


def initializer_elements(proto):
    return sum(int(np.prod(t.dims, dtype=np.int64)) for t in proto.graph.initializer)


def op_histogram(proto):
    return dict(sorted(collections.Counter(
        n.op_type for n in proto.graph.node).items()))


def buffer_breakdown(model):
    # Grouped by the buffer's own name (running_mean, num_batches_tracked, ...)
    # so a test can tell batch-norm statistics from other buffers.
    counts = collections.Counter()
    for name, b in model.named_buffers():
        counts[name.rsplit(".", 1)[-1]] += b.numel()
    return dict(sorted(counts.items()))


def break_constant_tensors_(model, seed=1234):
    """Give every constant-valued float parameter/buffer distinct values.

    Untrained models are full of identical tensors (zero biases, LayerNorm
    ones, BatchNorm's 0/1 running stats, which fold into identical Conv
    biases).  torch 1.13's exporter unconditionally deduplicates initializers
    with equal values in eval mode and rewires the duplicates through Identity
    nodes, which no trained checkpoint would produce.  Perturbing them keeps
    one initializer per tensor (tied weights stay tied: they are one tensor),
    and nonzero biases make the numeric references sensitive to a dropped
    bias.  Shapes and parameter counts are unchanged.
    """
    gen = torch.Generator().manual_seed(seed)
    tensors = list(model.named_parameters()) + list(model.named_buffers())
    with torch.no_grad():
        for name, t in tensors:
            if not t.is_floating_point() or t.numel() < 2:
                continue
            if name.endswith("running_var"):
                # Must stay positive.
                t.copy_(torch.rand(t.shape, generator=gen) + 0.5)
            elif bool((t == t.flatten()[0]).all()):
                t.add_(0.02 * torch.randn(t.shape, generator=gen))


def torch_counts(model):
    return {
        "torch_param_count": sum(p.numel() for p in model.parameters()),
        "torch_buffer_count": sum(b.numel() for b in model.buffers()),
        "torch_buffers": buffer_breakdown(model),
    }


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------

# GPT decoder sizes, shared by the export and the notes in models.json.
GPT = dict(layers=4, hidden=256, heads=4, vocab=1000, max_seq=128)
TINY_GPT = dict(layers=2, hidden=32, heads=2, vocab=64, max_seq=16)


def export_classifier(name, out_dir, max_bytes=MAX_GRAPH_BYTES):
    """A torchvision classifier (weights=None) at opset 17 with a symbolic
    batch, its weights dropped; returns the model."""
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    break_constant_tensors_(model)
    x = torch.randn(1, 3, 224, 224)
    # No torch.no_grad() here: under no_grad, nn.MultiheadAttention in eval
    # mode takes the fused fast path, which torch 1.13 cannot export.
    proto = export_to_proto(
        model, (x,), 17, ["input"], ["logits"],
        {"input": {0: "batch"}, "logits": {0: "batch"}})
    save_without_weights(proto, os.path.join(out_dir, name + ".onnx"),
                         max_bytes)
    return model


def make_resnet50(out_dir):
    model = export_classifier("resnet50", out_dir)
    return model, {
        "file": "resnet50.onnx", "opset": 17, "weights": "dropped",
        "note": "torchvision resnet50(weights=None), eval. The exporter folds "
                "BatchNorm into the preceding Conv, so the ONNX initializers "
                "hold no running stats. Constant-valued tensors (BN stats, "
                "biases) are perturbed before export so that no initializers "
                "are deduplicated.",
    }


def make_vit_b_16(out_dir):
    model = export_classifier("vit_b_16", out_dir)
    return model, {
        "file": "vit_b_16.onnx", "opset": 17, "weights": "dropped",
        "note": "torchvision vit_b_16(weights=None), eval; attention via "
                "nn.MultiheadAttention (slow path), LayerNorm exported as "
                "LayerNormalization (opset 17).",
    }


def make_gpt_decoder(out_dir):
    torch.manual_seed(0)
    model = GPTDecoder(**GPT).eval()
    break_constant_tensors_(model)
    idx = torch.randint(0, GPT["vocab"], (1, 16), dtype=torch.long)
    # Opset 13 on purpose: LayerNorm is decomposed into ReduceMean/Sub/Pow/
    # Sqrt/Div and the view() calls become runtime shape arithmetic.
    proto = export_to_proto(
        model, (idx,), 13, ["input_ids"], ["logits"],
        {"input_ids": {0: "batch", 1: "seq"},
         "logits": {0: "batch", 1: "seq"}})
    save_without_weights(proto, os.path.join(out_dir, "gpt_decoder.onnx"))
    return model, {
        "file": "gpt_decoder.onnx", "opset": 13, "weights": "dropped",
        "config": GPT,
        "note": "GPT-style pre-LN decoder in plain torch.nn: explicit causal "
                "attention (MatMul/Softmax, mask via Where), GELU MLP, LM head "
                "tied to the token embedding (counted once in "
                "torch_param_count; the export holds it twice, as the Gather "
                "table and as a transposed MatMul initializer). seq must be "
                "<= max_seq. The buffers are the per-layer bool causal masks, "
                "exported as Constant nodes.",
    }


def make_tiny_mlp(out_dir):
    torch.manual_seed(0)
    model = TinyMLP().eval()
    x = torch.randn(4, 16)
    proto = export_to_proto(model, (x,), 9, ["input"], ["probs"])
    save_inline(proto, os.path.join(out_dir, "tiny_mlp_opset9.onnx"))
    return model, {
        "file": "tiny_mlp_opset9.onnx", "opset": 9, "weights": "inline",
        "note": "Linear(16,32) -> ReLU -> Linear(32,8) -> Softmax(-1), "
                "static shapes, weights inline.",
    }


def make_tiny_gpt(out_dir):
    torch.manual_seed(0)
    model = GPTDecoder(**TINY_GPT).eval()
    break_constant_tensors_(model)
    idx = torch.randint(0, TINY_GPT["vocab"], (2, 8), dtype=torch.long)
    with torch.no_grad():
        logits = model(idx)
    proto = export_to_proto(model, (idx,), 11, ["input_ids"], ["logits"])
    save_inline(proto, os.path.join(out_dir, "tiny_gpt_weights.onnx"))

    # Raw little-endian dumps: trivially readable from C++ without npz/zip.
    idx_np = idx.numpy().astype("<i8")
    logits_np = logits.numpy().astype("<f4")
    idx_np.tofile(os.path.join(out_dir, "tiny_gpt_weights.input.bin"))
    logits_np.tofile(os.path.join(out_dir, "tiny_gpt_weights.logits.bin"))
    return model, {
        "file": "tiny_gpt_weights.onnx", "opset": 11, "weights": "inline",
        "config": TINY_GPT,
        "reference": {
            "input": {"file": "tiny_gpt_weights.input.bin", "dtype": "int64",
                      "byte_order": "little", "shape": list(idx_np.shape)},
            "logits": {"file": "tiny_gpt_weights.logits.bin",
                       "dtype": "float32", "byte_order": "little",
                       "shape": list(logits_np.shape)},
        },
        "note": "Same decoder as gpt_decoder.onnx, tiny config, static "
                "[2,8] input, weights inline; the .bin files are the input "
                "and PyTorch's logits for numeric checks (C-order).",
    }


def make_swin_t(out_dir):
    # With a symbolic batch the exporter writes each block's window
    # partitioning as run-time shape arithmetic (the Mod and ScatterND the
    # importer must fold): 6,357 nodes, 1.3 MB without weights.
    model = export_classifier("swin_t", out_dir, max_bytes=2 << 20)
    return model, {
        "file": "swin_t.onnx", "opset": 17, "weights": "dropped",
        "note": "torchvision swin_t(weights=None), eval: shifted windows "
                "(torch.roll as Slice/Concat), the shifted-window attention "
                "mask built from shapes (ScatterND, Mod, Equal, Where on "
                "values known at import). The exporter folds each block's "
                "relative-position bias table, gathered by its index buffer, "
                "into one [heads, 49, 49] initializer, so the ONNX file holds "
                "more elements than torch's parameters.",
    }


# PaddleOCR's text detector (DBNet, ppocr det): a MobileNetV3 backbone, the
# DB FPN neck (1x1 lateral convolutions, nearest 2x upsampling and adds, 3x3
# convolutions, the four maps upsampled to 1/4 and concatenated) and the DB
# head (3x3 convolution, two 2x2 stride-2 transposed convolutions back to
# full resolution, a sigmoid). Exported at opset 11 as paddle2onnx does, so
# HardSigmoid, HardSwish, Resize and ConvTranspose appear as PaddleOCR's
# ONNX files have them.
class DBFPN(nn.Module):
    def __init__(self, in_channels, out_channels=96):
        super().__init__()
        self.lateral = nn.ModuleList(
            [nn.Conv2d(c, out_channels, 1, bias=False) for c in in_channels])
        self.smooth = nn.ModuleList(
            [nn.Conv2d(out_channels, out_channels // 4, 3, padding=1,
                       bias=False) for _ in in_channels])

    def forward(self, features):
        laterals = [conv(f) for conv, f in zip(self.lateral, features)]
        for i in range(len(laterals) - 1, 0, -1):
            laterals[i - 1] = laterals[i - 1] + nn.functional.interpolate(
                laterals[i], scale_factor=2, mode="nearest")
        maps = [conv(l) for conv, l in zip(self.smooth, laterals)]
        maps = [nn.functional.interpolate(m, scale_factor=2 ** i,
                                          mode="nearest") if i else m
                for i, m in enumerate(maps)]
        return torch.cat(maps[::-1], dim=1)


class DBHead(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, channels // 4, 3, padding=1, bias=False),
            nn.BatchNorm2d(channels // 4), nn.ReLU(),
            nn.ConvTranspose2d(channels // 4, channels // 4, 2, stride=2),
            nn.BatchNorm2d(channels // 4), nn.ReLU(),
            nn.ConvTranspose2d(channels // 4, 1, 2, stride=2), nn.Sigmoid())

    def forward(self, x):
        return self.body(x)


class TextDetector(nn.Module):
    # Where torchvision's mobilenet_v3_small features reach strides 4, 8,
    # 16 and 32, and their channels.
    TAPS = (1, 3, 8, 12)
    CHANNELS = (16, 24, 48, 576)

    def __init__(self):
        super().__init__()
        self.backbone = torchvision.models.mobilenet_v3_small(
            weights=None).features
        self.neck = DBFPN(self.CHANNELS)
        self.head = DBHead(96)

    def forward(self, x):
        features = []
        for i, layer in enumerate(self.backbone):
            x = layer(x)
            if i in self.TAPS:
                features.append(x)
        return self.head(self.neck(features))


def make_ocr_det(out_dir):
    torch.manual_seed(0)
    model = TextDetector().eval()
    break_constant_tensors_(model)
    x = torch.randn(1, 3, 320, 320)
    proto = export_to_proto(
        model, (x,), 11, ["image"], ["probability_map"],
        {"image": {0: "batch"}, "probability_map": {0: "batch"}})
    save_without_weights(proto, os.path.join(out_dir, "ocr_det_db.onnx"))
    return model, {
        "file": "ocr_det_db.onnx", "opset": 11, "weights": "dropped",
        "note": "PaddleOCR-style DBNet text detector (MobileNetV3-small "
                "backbone, DB FPN neck with nearest upsampling, DB head with "
                "transposed convolutions), exported at opset 11 as "
                "paddle2onnx writes PaddleOCR's models: HardSigmoid, "
                "HardSwish, Resize, ConvTranspose. The exporter folds "
                "BatchNorm into the preceding convolutions.",
    }


MODELS = [make_resnet50, make_vit_b_16, make_gpt_decoder, make_tiny_mlp,
          make_tiny_gpt, make_swin_t, make_ocr_det]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--only", action="append", default=[],
                    help="export only this file (repeatable); the other "
                         "models' entries in models.json are kept")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    entries = []
    kept = {}
    meta_path = os.path.join(args.out, "models.json")
    if args.only and os.path.exists(meta_path):
        with open(meta_path) as f:
            kept = {e["file"]: e for e in json.load(f)["models"]}
    for make in MODELS:
        name = make.__name__[len("make_"):]
        if args.only and not any(o.startswith(name) or name in o
                                 for o in args.only):
            entry = kept.get(next((k for k in kept if k.startswith(name)), ""))
            if entry:
                entries.append(entry)
            continue
        model, entry = make(args.out)
        # Describe the file as committed (not the in-memory export), which
        # also proves the weight-less graphs load without their .data file.
        proto = onnx.load(os.path.join(args.out, entry["file"]),
                          load_external_data=False)
        entry.update({
            "inputs": describe_values(proto.graph.input),
            "outputs": describe_values(proto.graph.output),
        })
        entry.update(torch_counts(model))
        entry["onnx_initializer_count"] = initializer_elements(proto)
        entry["op_types"] = op_histogram(proto)
        entries.append(entry)

        size = os.path.getsize(os.path.join(args.out, entry["file"]))
        print(f"== {entry['file']}  opset {entry['opset']}  {size} bytes  "
              f"params {entry['torch_param_count']}  "
              f"buffers {entry['torch_buffer_count']}  "
              f"onnx init elems {entry['onnx_initializer_count']}")
        for op, n in entry["op_types"].items():
            print(f"   {op:24s} {n}")

    meta = {
        "generator": "scripts/export_test_models.py",
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "onnx": onnx.__version__,
        "models": entries,
    }
    with open(os.path.join(args.out, "models.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
