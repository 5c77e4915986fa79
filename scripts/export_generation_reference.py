"""Writes the reference for cleave generate against Hugging Face transformers.

A LlamaForCausalLM with random weights (seeded) and the zoo family's shape
(`zoo:llama,layers=2,hidden=64,heads=4,kv_heads=2,ffn=128,vocab=256`) is
built in PyTorch; its weights are written as safetensors under cleave's
parameter names and layouts (a Linear's weight transposed: cleave's
matmuls read [in, out]), and `generate` (greedy, each prompt alone) writes
the tokens each prompt continues with, one request a line, and the
logits of every generated position (float32, request by request) for the
comparison. The same model is also exported to ONNX (llama_hf.onnx, by
torch.onnx.export's default exporter, batch and sequence symbolic,
position_ids an input) for cleave's generation of imported decoders, and
so are a Mixtral (mixture of experts) and a GPT-2 (learned positions),
each with its own tokens and logits (mixtral_hf.*, gpt2_hf.*). test/Runtime/generate-transformers.test runs cleave on the
same weights and prompts. Needs torch, transformers, onnxscript and safetensors (not
cleave's dependencies: run it where they are installed, commit its
outputs).

usage: python export_generation_reference.py PROMPTS OUT_DIR
"""
import json
import os
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import (GPT2Config, GPT2LMHeadModel, LlamaConfig,
                          LlamaForCausalLM, MixtralConfig, MixtralForCausalLM)

NEW_TOKENS = 8


class DecoderStep(torch.nn.Module):
    """The model's logits from the three inputs a Hugging Face decoder
    takes, positions included: exported so, its rotary angles follow
    position_ids instead of being folded for positions 0 to T-1."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, position_ids):
        return self.model(input_ids=input_ids, attention_mask=attention_mask,
                          position_ids=position_ids, use_cache=False).logits


def export_onnx(model, path):
    """The same model as torch.onnx.export's default (dynamo) exporter
    writes it, batch and sequence left symbolic (a generation step imports
    it at its own rows of one token each)."""
    ids = torch.zeros(2, 16, dtype=torch.int64)
    mask = torch.ones(2, 16, dtype=torch.int64)
    positions = torch.arange(16).expand(2, 16).contiguous()
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    dims = {"input_ids": {0: batch, 1: seq},
            "attention_mask": {0: batch, 1: seq},
            "position_ids": {0: batch, 1: seq}}
    torch.onnx.export(DecoderStep(model), (ids, mask, positions), str(path),
                      input_names=list(dims), output_names=["logits"],
                      dynamic_shapes=dims)


def widen(model):
    """Larger weights than the default init (std 0.02), so that the logits
    are far apart and greedy choices are not ties within rounding."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" not in name and ".ln_" not in name:
                p.normal_(0.0, 0.3)
    return model.eval()


def write_reference(model, prompts, out, name):
    """NAME.tokens (what `generate` continues each prompt with, greedy,
    each prompt alone) and NAME.logits.bin (the logits of every generated
    position, float32, request by request)."""
    tokens, logits = [], []
    with torch.no_grad():
        for prompt in prompts:
            ids = torch.tensor([prompt])
            result = model.generate(ids, max_new_tokens=NEW_TOKENS,
                                    do_sample=False, output_logits=True,
                                    return_dict_in_generate=True,
                                    pad_token_id=0)
            tokens.append(result.sequences[0, len(prompt):].tolist())
            logits.append(torch.stack(result.logits)[:, 0, :])
    (out / f"{name}.tokens").write_text("".join(
        f"request {i}: {len(p)} prompt + {len(t)} generated tokens: "
        + " ".join(map(str, t)) + "\n"
        for i, (p, t) in enumerate(zip(prompts, tokens))))
    torch.cat(logits).numpy().astype("float32").tofile(
        out / f"{name}.logits.bin")


def export_llama3_width(path):
    """Llama 3 8B's layer at its real width (hidden 4096, 32 heads over 8
    key/value heads, MLP 14336, vocabulary 128256), two of its 32 layers,
    exported as llama_hf.onnx is; its 1.5 B weights (6 GB) are then
    dropped, as test/models/README.md says of the planning-only models:
    each initializer keeps its name, type and dims, and its data file is
    deleted. The serving planner and the generation step's lowering read
    shapes only. Needs about 7 GB of memory."""
    config = LlamaConfig(vocab_size=128256, hidden_size=4096,
                         intermediate_size=14336, num_hidden_layers=2,
                         num_attention_heads=32, num_key_value_heads=8,
                         max_position_embeddings=8192, rope_theta=500000.0,
                         rms_norm_eps=1e-5, tie_word_embeddings=False)
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    model = model.to_empty(device="cpu").eval()
    model.model.rotary_emb.inv_freq = 1.0 / (500000.0 ** (
        torch.arange(0, 128, 2, dtype=torch.float32) / 128))
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-0.01, 0.01)
    export_onnx(model, path)
    os.remove(str(path) + ".data")


def main():
    prompts_path, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    prompts = [[int(t) for t in line.split()]
               for line in prompts_path.read_text().splitlines()
               if line.strip() and not line.lstrip().startswith("#")]
    torch.manual_seed(20261207)
    config = LlamaConfig(vocab_size=256, hidden_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2,
                         intermediate_size=128, rms_norm_eps=1e-5,
                         rope_theta=10000.0, max_position_embeddings=64,
                         tie_word_embeddings=False, attention_bias=False,
                         mlp_bias=False)
    model = widen(LlamaForCausalLM(config))
    state = {}
    for name, tensor in model.state_dict().items():
        name = name.removeprefix("model.")
        if name.endswith("_proj.weight") or name == "lm_head.weight":
            tensor = tensor.t()  # nn.Linear [out, in] -> cleave [in, out]
        state[name] = tensor.contiguous().float()
    save_file(state, str(out / "llama_hf.safetensors"))
    write_reference(model, prompts, out, "llama_hf")
    export_onnx(model, out / "llama_hf.onnx")

    # Two more decoders, as ONNX only: Mixtral (a mixture of experts, its
    # experts batched as transformers' "batched_mm" runs them: the eager
    # default routes with NonZero, whose shape depends on the data) and
    # GPT-2 (learned positions, biases, GELU, tied head).
    torch.manual_seed(20261208)
    mixtral = widen(MixtralForCausalLM(MixtralConfig(
        vocab_size=128, hidden_size=32, intermediate_size=64,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=64, num_local_experts=4,
        num_experts_per_tok=2, experts_implementation="batched_mm")))
    write_reference(mixtral, prompts, out, "mixtral_hf")
    export_onnx(mixtral, out / "mixtral_hf.onnx")
    torch.manual_seed(20261209)
    gpt2 = widen(GPT2LMHeadModel(GPT2Config(
        vocab_size=128, n_positions=64, n_embd=32, n_layer=2, n_head=4)))
    write_reference(gpt2, prompts, out, "gpt2_hf")
    export_onnx(gpt2, out / "gpt2_hf.onnx")

    export_llama3_width(out / "llama3_8b_2l.onnx")
    versions = {"torch": torch.__version__,
                "transformers": __import__("transformers").__version__}
    (out / "llama_hf.json").write_text(json.dumps(
        {"versions": versions, "new_tokens": NEW_TOKENS,
         "seed": 20261207, "init_std": 0.3,
         "seeds": {"mixtral_hf": 20261208, "gpt2_hf": 20261209}},
        indent=1) + "\n")


if __name__ == "__main__":
    main()
