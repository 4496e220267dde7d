#!/usr/bin/env python3
"""Builds a small, randomly initialised Hugging Face causal LM directory with a real BPE tokenizer.

No model hub is needed: the tokenizer is a byte-level BPE trained by `tokenizers` on text files of
this repository (READMEs, docs, the .proto files), the weights are random (seeded). The directory is
what `AutoModelForCausalLM.from_pretrained` / `AutoTokenizer.from_pretrained` load, so it is a
`learner.model` (`--model DIR`) of the PyTorch learner, of TRL, verl, ...:

    DIR/config.json  generation_config.json  model.safetensors
    DIR/tokenizer.json  tokenizer_config.json  (chat template inside; special tokens)

    python3 scripts/make-tiny-hf-model.py --arch qwen2 --out /tmp/tiny-qwen2
    python3 scripts/make-tiny-hf-model.py --arch llama --out /tmp/tiny-llama --hidden 64 --layers 2

Architectures: `qwen2` (Qwen-style ChatML template with tools: `<|im_start|>role ... <|im_end|>`,
EOS `<|im_end|>`) and `llama` (Llama-3-style header template, EOS `<|eot_id|>`). The same arguments
give the same directory contents (weights, tokenizer) for the same corpus; building takes a few
seconds on a CPU. Prints one JSON line describing what it wrote. Needs torch, transformers (≥ 4.40),
tokenizers and safetensors. Exit status 2 on bad arguments.
"""

import argparse
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Text of the repository the tokenizer learns its merges from (paths relative to the repository root;
# directories contribute their *.md and *.proto files, sorted). Present in a fresh clone.
DEFAULT_CORPUS = ["README.md", "trainer/README.md", "trainer/learner-torch/README.md", "docs", "proto/rewardmesh/v1"]

QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
LLAMA_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
# Not special (they stay in decoded text, as in Qwen2.5): the markers of a tool call and its result.
TOOL_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

# Qwen2.5-style ChatML: tools (JSON schemas) go into the system turn, assistant tool calls are
# <tool_call>{json}</tool_call>, tool results are user turns wrapped in <tool_response>.
CHATML_TEMPLATE = (
    "{% if tools %}"
    "<|im_start|>system\n"
    "{% if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}{% else %}You are a helpful assistant.{% endif %}"
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
    "{% for tool in tools %}\n{{ tool | tojson }}{% endfor %}\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n"
    "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
    "{% elif messages and messages[0]['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}"
    "{% if not tools %}<|im_start|>system\n{{ message['content'] }}<|im_end|>\n{% endif %}"
    "{% elif message['role'] == 'tool' %}"
    "<|im_start|>user\n<tool_response>\n{{ message['content'] }}\n</tool_response><|im_end|>\n"
    "{% elif message['role'] == 'assistant' and message.get('tool_calls') %}"
    "<|im_start|>assistant{% if message['content'] %}\n{{ message['content'] }}{% endif %}"
    "{% for call in message['tool_calls'] %}{% set f = call['function'] if call['function'] is defined else call %}"
    "\n<tool_call>\n{\"name\": \"{{ f['name'] }}\", \"arguments\": "
    "{% if f['arguments'] is string %}{{ f['arguments'] }}{% else %}{{ f['arguments'] | tojson }}{% endif %}}\n</tool_call>"
    "{% endfor %}<|im_end|>\n"
    "{% else %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# Llama-3-style headers; tools (if any) are listed in the system turn as JSON.
LLAMA_TEMPLATE = (
    "<|begin_of_text|>"
    "{% if tools %}<|start_header_id|>system<|end_header_id|>\n\n"
    "{% if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}\n\n{% endif %}"
    "You have access to these functions (JSON schemas):{% for tool in tools %}\n{{ tool | tojson }}{% endfor %}<|eot_id|>"
    "{% endif %}"
    "{% for message in messages %}"
    "{% if not (tools and message['role'] == 'system') %}"
    "<|start_header_id|>{{ 'ipython' if message['role'] == 'tool' else message['role'] }}<|end_header_id|>\n\n"
    "{{ message['content'] }}<|eot_id|>"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)


def _keep_newlines(template: str) -> str:
    """Chat templates are rendered with `trim_blocks` (the newline right after a block tag is dropped):
    spell those newlines as expressions so that they stay."""
    return template.replace("%}\n", "%}{{ '\\n' }}")


CHATML_TEMPLATE = _keep_newlines(CHATML_TEMPLATE)
LLAMA_TEMPLATE = _keep_newlines(LLAMA_TEMPLATE)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="make-tiny-hf-model.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--arch", choices=["qwen2", "llama"], default="qwen2", help="model family (default qwen2)")
    p.add_argument("--out", required=True, help="output directory (created; existing model files are overwritten)")
    p.add_argument("--hidden", type=int, default=128, help="hidden size (default 128)")
    p.add_argument("--layers", type=int, default=2, help="decoder layers (default 2)")
    p.add_argument("--heads", type=int, default=4, help="attention heads (default 4; hidden must be a multiple)")
    p.add_argument("--kv-heads", type=int, default=2, help="key/value heads (default 2; must divide --heads)")
    p.add_argument("--intermediate", type=int, default=0, help="MLP size (default 3 × hidden)")
    p.add_argument("--vocab", type=int, default=4096, help="BPE vocabulary size to train (default 4096, at least 512)")
    p.add_argument("--max-positions", type=int, default=8192, help="max_position_embeddings (default 8192)")
    p.add_argument("--seed", type=int, default=0, help="weight initialisation seed (default 0)")
    p.add_argument("--tie-embeddings", choices=["yes", "no"], default="yes", help="tie input and output embeddings (default yes)")
    p.add_argument("--corpus", action="append", default=None, help="a file or directory to train the tokenizer on (repeatable; default: the repository's READMEs, docs/ and proto/)")
    a = p.parse_args(argv)
    for name in ("hidden", "layers", "heads", "kv_heads", "max_positions"):
        if getattr(a, name) <= 0:
            p.error(f"--{name.replace('_', '-')} must be a positive integer, got {getattr(a, name)}")
    if a.hidden % a.heads:
        p.error(f"--hidden {a.hidden} is not a multiple of --heads {a.heads}")
    if a.heads % a.kv_heads:
        p.error(f"--kv-heads {a.kv_heads} does not divide --heads {a.heads}")
    if (a.hidden // a.heads) % 2:
        p.error(f"the head size --hidden / --heads = {a.hidden // a.heads} must be even (rotary embeddings)")
    if a.vocab < 512:
        p.error(f"--vocab must be at least 512 (256 byte tokens + merges + special tokens), got {a.vocab}")
    if a.intermediate < 0:
        p.error(f"--intermediate must be 0 (3 × hidden) or positive, got {a.intermediate}")
    return a


def corpus_files(entries):
    """The files to train on, in a fixed order."""
    files = []
    for entry in entries:
        path = entry if os.path.isabs(entry) else os.path.join(REPO, entry)
        if os.path.isdir(path):
            files += sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith((".md", ".proto")))
        elif os.path.isfile(path):
            files.append(path)
        else:
            raise SystemExit(f"make-tiny-hf-model.py: --corpus '{entry}' is neither a file nor a directory")
    if not files:
        raise SystemExit(f"make-tiny-hf-model.py: no .md or .proto files in the corpus {entries}")
    return files


def corpus_lines(files):
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.strip():
                    yield line


def train_tokenizer(arch: str, vocab: int, files):
    """A byte-level BPE (as GPT-2 / Qwen2 / Llama 3) wrapped as a PreTrainedTokenizerFast with a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = QWEN_SPECIALS if arch == "qwen2" else LLAMA_SPECIALS
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab - len(TOOL_TOKENS),
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus_lines(files), trainer)
    if arch == "qwen2":
        hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None, unk_token=None)
        hf.chat_template = CHATML_TEMPLATE
    else:
        hf = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>", pad_token="<|end_of_text|>", unk_token=None)
        hf.chat_template = LLAMA_TEMPLATE
    hf.add_tokens(TOOL_TOKENS)
    hf.model_max_length = 1 << 30
    return hf


def build_model(a, tok):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    common = dict(
        vocab_size=len(tok),
        hidden_size=a.hidden,
        intermediate_size=a.intermediate or 3 * a.hidden,
        num_hidden_layers=a.layers,
        num_attention_heads=a.heads,
        num_key_value_heads=a.kv_heads,
        max_position_embeddings=a.max_positions,
        rms_norm_eps=1e-6,
        rope_theta=10000.0,
        tie_word_embeddings=a.tie_embeddings == "yes",
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        initializer_range=0.02,
    )
    torch.manual_seed(a.seed)
    if a.arch == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(**common))
    else:
        model = LlamaForCausalLM(LlamaConfig(**common))
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.bos_token_id = tok.bos_token_id
    return model


def main(argv=None) -> int:
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    a = parse_args(sys.argv[1:] if argv is None else argv)
    files = corpus_files(a.corpus or DEFAULT_CORPUS)
    tok = train_tokenizer(a.arch, a.vocab, files)
    model = build_model(a, tok)
    os.makedirs(a.out, exist_ok=True)
    tok.save_pretrained(a.out)
    model.save_pretrained(a.out, safe_serialization=True)
    print(json.dumps({
        "event": "built",
        "out": os.path.abspath(a.out),
        "arch": a.arch,
        "architecture": type(model).__name__,
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": len(tok),
        "hidden": a.hidden,
        "layers": a.layers,
        "max_positions": a.max_positions,
        "eos_token": tok.eos_token,
        "corpus_files": len(files),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
