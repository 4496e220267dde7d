"""Hugging Face policies: needs `transformers` (+ `tokenizers`; `peft` for LoRA). Skipped here when they
are missing. Builds a tiny random GPT-2 with a byte-level tokenizer in a temporary directory (nothing
is downloaded) and runs the learner over it."""

import os
import shutil
import tempfile
import unittest

import torch

import helpers
from reward_mesh_learner.errors import PolicyLoadError
from reward_mesh_learner.hf import HFTokenizer, peft_available, transformers_available
from reward_mesh_learner.learner import TorchLearner
from reward_mesh_learner.policy import load_policy

HAS_TRANSFORMERS = transformers_available()
REASON = "transformers is not installed (pip install transformers safetensors tokenizers)"


def build_tiny_gpt2(directory: str) -> None:
    """A 1-layer GPT-2 and a byte-level BPE tokenizer without merges (256 bytes + <eos>)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    byte_chars = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(byte_chars))}
    vocab["<eos>"] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", pad_token="<eos>")
    fast.save_pretrained(directory)
    cfg = GPT2Config(vocab_size=len(vocab), n_positions=128, n_embd=32, n_layer=1, n_head=2, eos_token_id=vocab["<eos>"])
    torch.manual_seed(0)
    GPT2LMHeadModel(cfg).save_pretrained(directory, safe_serialization=True)


class HFMissing(unittest.TestCase):
    @unittest.skipIf(HAS_TRANSFORMERS, "transformers is installed")
    def test_clear_error_without_transformers(self):
        tmp = tempfile.mkdtemp()
        try:
            with self.assertRaises(PolicyLoadError) as cm:
                load_policy(tmp, device="cpu")
            self.assertIn("--model", str(cm.exception))
            self.assertIn("pip install transformers", str(cm.exception))
        finally:
            shutil.rmtree(tmp)

    def test_nonexistent_directory(self):
        with self.assertRaises(PolicyLoadError) as cm:
            load_policy("/nonexistent/model-dir", device="cpu")
        self.assertIn("--model", str(cm.exception))


class HFTokenizerDecode(unittest.TestCase):
    def test_ids_beyond_the_tokenizer_are_left_out(self):
        """Model vocabularies are often larger than their tokenizer's; sampled ids past it must not
        reach `decode` (slow tokenizers raise on them)."""

        class Slow:
            eos_token_id = 1

            def get_vocab(self):
                return {"<pad>": 0, "<eos>": 1, "a": 2, "b": 3}

            def __len__(self):
                return 4

            def decode(self, ids, skip_special_tokens=False):
                return "".join(["", "", "a", "b"][i] for i in ids)

        self.assertEqual(HFTokenizer(Slow()).decode([2, 7, 3, 4, 2]), "aba")


@unittest.skipUnless(HAS_TRANSFORMERS, REASON)
class HFPolicyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="torch-learner-hf-")
        build_tiny_gpt2(os.path.join(cls.dir, "model"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def run_learner(self, **kw):
        policy = load_policy(os.path.join(self.dir, "model"), device="cpu", dtype="float32", **kw)
        learner = TorchLearner(policy)
        info = learner.info()
        # transformers 5 names its fast tokenizer class TokenizersBackend (4.x: PreTrainedTokenizerFast)
        self.assertIn(info.tokenizer, ("PreTrainedTokenizerFast", "TokenizersBackend"))
        self.assertEqual((info.vocab_size, info.max_context), (257, 128))
        out = helpers.generate(learner, n=4, max_new_tokens=6)
        res = learner.train_step(helpers.step_request(helpers.samples_from(out)))
        self.assertEqual((res.metrics["clipFraction"], res.metrics["approxKlOld"]), (0.0, 0.0))
        seqs = [helpers.ScoredSequence("a", c.prompt_token_ids, c.token_ids) for c in out]
        self.assertEqual([len(x) for x in learner.compute_logprobs(seqs)], [len(c.token_ids) for c in out])
        path = learner.save_checkpoint(os.path.join(self.dir, "ckpt-" + str(kw.get("lora_rank", 0))))
        restored = TorchLearner.from_checkpoint(path, device="cpu")
        self.assertEqual(helpers.generate(restored, n=2, seed=4), helpers.generate(learner, n=2, seed=4))
        return learner

    def test_full_fine_tuning(self):
        self.run_learner()

    @unittest.skipUnless(peft_available(), "peft is not installed (pip install peft)")
    def test_lora(self):
        learner = self.run_learner(lora_rank=4, lora_alpha=8)
        self.assertIn("LoRA", learner.info().architecture)

    @unittest.skipUnless(torch.cuda.is_available(), "no CUDA device")
    def test_cuda_bfloat16(self):
        policy = load_policy(os.path.join(self.dir, "model"), device="cuda")
        self.assertEqual(policy.dtype, torch.bfloat16)
        learner = TorchLearner(policy)
        out = helpers.generate(learner, n=2, max_new_tokens=4)
        learner.train_step(helpers.step_request(helpers.samples_from(out)))

    @unittest.skipUnless(torch.cuda.is_available() and peft_available(), "no CUDA device or no peft")
    def test_cuda_lora_bfloat16(self):
        """LoRA on CUDA: only the adapter trains, and the KL reference (adapter disabled) is the base."""
        policy = load_policy(os.path.join(self.dir, "model"), device="cuda", lora_rank=4, lora_alpha=8)
        self.assertEqual(policy.dtype, torch.bfloat16)
        base = {k: v.detach().clone() for k, v in policy.model.named_parameters() if not v.requires_grad}
        learner = TorchLearner(policy)
        out = helpers.generate(learner, n=2, max_new_tokens=4)
        learner.train_step(helpers.step_request(helpers.samples_from(out)))
        after = dict(policy.model.named_parameters())
        self.assertTrue(all(torch.equal(v, after[k]) for k, v in base.items()), "a frozen base weight changed")
        self.assertTrue(all("lora_" in k for k, v in after.items() if v.requires_grad))


@unittest.skipUnless(torch.cuda.is_available(), "no CUDA device")
class BuiltinOnCuda(unittest.TestCase):
    def test_builtin_on_cuda(self):
        policy = load_policy("builtin:tiny", device="cuda")
        learner = TorchLearner(policy)
        a = helpers.generate(learner, n=3)
        self.assertEqual(a, helpers.generate(learner, n=3))
        res = learner.train_step(helpers.step_request(helpers.samples_from(a)))
        self.assertEqual(res.metrics["approxKlOld"], 0.0)


if __name__ == "__main__":
    unittest.main()
