"""Tokenizers of text policies: the byte-level tokenizer of the built-in models.

Layout: ids 0..255 are the bytes of the UTF-8 text, then three specials: BOS = 256, EOS = 257,
PAD = 258 (vocabulary 259). A prompt starts with BOS. Chat messages are rendered as
``<|{role}|>\\n{content}\\n`` each, followed by ``<|assistant|>\\n`` (the generation prompt), all as
plain bytes after the BOS. Decoding skips the specials and replaces invalid UTF-8 (``errors="replace"``).

Hugging Face tokenizers are wrapped by `hf.HFTokenizer`, which offers the same methods.
"""

from typing import Iterable, List, Sequence

BOS_ID = 256
EOS_ID = 257
PAD_ID = 258
BYTE_VOCAB_SIZE = 259


def render_chat(messages: Sequence) -> str:
    """The built-in chat template: one ``<|role|>\\ncontent\\n`` block per message, then the
    assistant's generation prompt."""
    parts = [f"<|{m.role}|>\n{m.content}\n" for m in messages]
    parts.append("<|assistant|>\n")
    return "".join(parts)


class ByteTokenizer:
    """UTF-8 bytes plus BOS/EOS/PAD (see the module docstring)."""

    name = "byte-level"
    vocab_size = BYTE_VOCAB_SIZE
    bos_id = BOS_ID
    eos_id = EOS_ID
    pad_id = PAD_ID

    @property
    def eos_ids(self) -> frozenset:
        """Token ids that end a completion."""
        return frozenset({EOS_ID})

    def encode(self, text: str) -> List[int]:
        """The UTF-8 bytes of `text` (no specials)."""
        return list(text.encode("utf-8"))

    def encode_prompt(self, text: str = "", messages: Sequence = ()) -> List[int]:
        """A prompt's ids: BOS, then the chat template of `messages` (when given) or `text`."""
        body = render_chat(messages) if messages else text
        return [BOS_ID] + self.encode(body)

    def encode_example(self, text: str = "", messages: Sequence = ()) -> List[int]:
        """Alias of `encode_prompt` (warm-up examples use the same rendering)."""
        return self.encode_prompt(text, messages)

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids`, specials skipped, invalid UTF-8 replaced."""
        return bytes(i for i in ids if 0 <= i < 256).decode("utf-8", errors="replace")
