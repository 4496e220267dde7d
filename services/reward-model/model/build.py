#!/usr/bin/python3
"""Builds the reward-model service's tiny test model, deterministically, with Debian's python3-torch.

Writes into OUT_DIR (default: the directory of this script):
  tokenizer.json         a HuggingFace WordPiece tokenizer over a small English vocabulary
  tokenizer_config.json  its companion settings
  model.onnx             a one-layer transformer encoder with a scalar head, exported from PyTorch
  reference.json         the PyTorch module's own scores for a fixed set of (prompt, response) pairs,
                         with the token ids this script's own WordPiece implementation gives them

The service's tests check the ONNX Runtime scores and the JS tokenizer's ids against reference.json,
and that rebuilding here gives the committed files back (drift check).

Usage: /usr/bin/python3 services/reward-model/model/build.py [OUT_DIR] [--size tiny|bench]
"""

import json
import math
import os
import re
import sys

import torch

SEED = 20261201
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^`{|}~")
WORDS = """
the a an of to and in is it that for on with as was be by this are or at from not but have has had
you your we our they their he she his her i me my what which who how why when where there here if
then than so do does did done can could will would should may might must one two three four five six
seven eight nine ten zero plus minus times divided equals answer answers question questions result
number numbers sum product total value code function return print list string int float true false
none null def class import python javascript test tests pass fail error errors output input file
read write run call tool tools good bad great wrong right correct incorrect yes no please thank
thanks sorry help hello world because therefore step steps first second third finally solve solution
problem problems explain explanation reason think let us compute calculate check verify
""".split()
SIZES = {
    "tiny": {"d_model": 32, "heads": 2, "d_ff": 64, "layers": 1, "max_len": 128},
    "bench": {"d_model": 128, "heads": 4, "d_ff": 512, "layers": 2, "max_len": 128},
}
CASES = [
    ("What is two plus two?", "The answer is four."),
    ("What is two plus two?", "I think it is five, sorry."),
    ("Write a python function that returns the sum of a list.", "def total(xs): return sum(xs)"),
    ("Hello!", "Hello world, how can I help you?"),
    ("Explain why the sky is blue.", "Because of Rayleigh scattering: short wavelengths scatter more."),
    ("", "An empty prompt still has a response."),
    ("Solve 12 * 7.", ""),
    ("Check the result: 3 + 4 = 7?", "Yes, that is correct. 3 + 4 = 7"),
]


def vocabulary():
    chars = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)] + PUNCT
    words = [w for w in dict.fromkeys(WORDS) if len(w) > 1]
    return SPECIALS + chars + ["##" + c for c in chars if c not in PUNCT] + words


def tokenizer_json(vocab):
    ids = {t: i for i, t in enumerate(vocab)}
    added = [
        {"id": ids[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for t in SPECIALS
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {t: {"id": t, "ids": [ids[t]], "tokens": [t]} for t in ("[CLS]", "[SEP]")},
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": ids},
    }


def wordpiece(text, ids):
    """Independent reference tokenization (ASCII text): lowercase, split on spaces and punctuation,
    greedy longest-match WordPiece; a word with no full cover becomes [UNK]."""
    out = []
    for word in re.findall(r"[A-Za-z0-9]+|[^\sA-Za-z0-9]", text.lower()):
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in ids:
                    break
                end -= 1
            if end == start:
                pieces = ["[UNK]"]
                break
            pieces.append(piece)
            start = end
        out += [ids[p] for p in pieces]
    return out


def pair_ids(prompt, response, ids):
    return [ids["[CLS]"]] + wordpiece(prompt, ids) + [ids["[SEP]"]] + wordpiece(response, ids) + [ids["[SEP]"]]


class Layer(torch.nn.Module):
    def __init__(self, d, heads, d_ff):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)
        self.norm1 = torch.nn.LayerNorm(d)
        self.ff1 = torch.nn.Linear(d, d_ff)
        self.ff2 = torch.nn.Linear(d_ff, d)
        self.norm2 = torch.nn.LayerNorm(d)

    def forward(self, h, additive_mask):
        b, t, d = h.shape
        q, k, v = self.qkv(h).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads) + additive_mask
        ctx = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        h = self.norm1(h + self.out(ctx))
        return self.norm2(h + self.ff2(torch.nn.functional.gelu(self.ff1(h))))


class RewardModel(torch.nn.Module):
    """Token + position embeddings, post-norm encoder layers, a scalar head on the first ([CLS]) token.
    Padded positions get a -1e9 additive attention mask, so they cannot change any real token's score."""

    def __init__(self, vocab_size, d_model, heads, d_ff, layers, max_len):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab_size, d_model)
        self.pos = torch.nn.Embedding(max_len, d_model)
        self.layers = torch.nn.ModuleList([Layer(d_model, heads, d_ff) for _ in range(layers)])
        self.head = torch.nn.Linear(d_model, 1)
        torch.nn.init.normal_(self.head.weight, std=0.5)

    def forward(self, input_ids, attention_mask):
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        h = self.tok(input_ids) + self.pos(positions)
        additive = ((1.0 - attention_mask.to(torch.float32)) * -1e9)[:, None, None, :]
        for layer in self.layers:
            h = layer(h, additive)
        return self.head(torch.tanh(h[:, 0, :])).squeeze(-1)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    size = "tiny"
    if "--size" in sys.argv:
        size = sys.argv[sys.argv.index("--size") + 1]
        args = [a for a in args if a != size]
    if size not in SIZES:
        sys.exit(f"build.py: unknown --size '{size}' (known: {', '.join(SIZES)})")
    out_dir = args[0] if args else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(SEED)
    torch.set_num_threads(1)

    vocab = vocabulary()
    ids = {t: i for i, t in enumerate(vocab)}
    cfg = SIZES[size]
    model = RewardModel(len(vocab), **cfg).eval()

    def write_json(name, obj):
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1, ensure_ascii=False)
            f.write("\n")

    write_json("tokenizer.json", tokenizer_json(vocab))
    write_json("tokenizer_config.json", {
        "tokenizer_class": "BertTokenizer", "model_max_length": cfg["max_len"], "do_lower_case": True,
        "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]",
    })

    example = torch.tensor([pair_ids(*CASES[0], ids)], dtype=torch.int64)
    torch.onnx.export(
        model, (example, torch.ones_like(example)), os.path.join(out_dir, "model.onnx"),
        input_names=["input_ids", "attention_mask"], output_names=["score"],
        dynamic_axes={"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
                      "score": {0: "batch"}},
        opset_version=14, do_constant_folding=True,
    )

    cases = []
    with torch.no_grad():
        for prompt, response in CASES:
            seq = pair_ids(prompt, response, ids)
            x = torch.tensor([seq], dtype=torch.int64)
            cases.append({"prompt": prompt, "response": response, "input_ids": seq,
                          "score": float(model(x, torch.ones_like(x))[0])})
        # Self-check: a padded batch scores as each sequence alone.
        longest = max(len(c["input_ids"]) for c in cases)
        batch = torch.tensor([c["input_ids"] + [ids["[PAD]"]] * (longest - len(c["input_ids"])) for c in cases])
        mask = torch.tensor([[1] * len(c["input_ids"]) + [0] * (longest - len(c["input_ids"])) for c in cases])
        drift = max(abs(float(s) - c["score"]) for s, c in zip(model(batch, mask), cases))
        assert drift < 1e-5, f"padding changed a score by {drift}"
    write_json("reference.json", {
        "generated": "by build.py -- do not edit",
        "torch": torch.__version__,
        "size": size,
        "max_length": cfg["max_len"],
        "cases": cases,
    })


if __name__ == "__main__":
    main()
