"""The built-in transformer and tokenizer: sizes, deterministic init, padding/position handling, the
KV cache (sampling logprobs equal a full forward pass), gradient checkpointing."""

import unittest

import torch

import helpers
from reward_mesh_learner.batching import completion_logprobs, pack
from reward_mesh_learner.contract import ChatMessage, ScoredSequence
from reward_mesh_learner.errors import PolicyLoadError
from reward_mesh_learner.model import BUILTIN_SIZES, TinyCausalLM, build_builtin, builtin_config
from reward_mesh_learner.policy import load_policy
from reward_mesh_learner.sampling import RowSpec, sample_rows
from reward_mesh_learner.tokenizer import BOS_ID, EOS_ID, PAD_ID, ByteTokenizer


class Tokenizer(unittest.TestCase):
    def test_layout_and_round_trip(self):
        tok = ByteTokenizer()
        self.assertEqual((BOS_ID, EOS_ID, PAD_ID, tok.vocab_size), (256, 257, 258, 259))
        ids = tok.encode_prompt("héllo")
        self.assertEqual(ids[0], BOS_ID)
        self.assertEqual(ids[1:], list("héllo".encode("utf-8")))
        self.assertEqual(tok.decode(ids + [EOS_ID, PAD_ID]), "héllo")
        self.assertEqual(tok.decode([0xC3]), "\ufffd")

    def test_chat_template(self):
        tok = ByteTokenizer()
        ids = tok.encode_prompt("ignored", [ChatMessage("system", "Be brief."), ChatMessage("user", "Hi")])
        self.assertEqual(tok.decode(ids), "<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\n")


class Model(unittest.TestCase):
    def test_sizes_and_parameter_count(self):
        m = build_builtin("builtin:tiny", 0)
        self.assertEqual(sum(p.numel() for p in m.parameters()), 149_440)
        self.assertEqual(m.architecture, "TinyCausalLM(layers=2, d_model=64, heads=4, context=512)")
        small = build_builtin("builtin:small", 0)
        self.assertEqual(sum(p.numel() for p in small.parameters()), 3_488_000)
        self.assertEqual(small.architecture, "TinyCausalLM(layers=4, d_model=256, heads=8, context=1024)")
        self.assertEqual(builtin_config("builtin:small"), BUILTIN_SIZES["small"])
        long = build_builtin("builtin:tiny4k", 0)
        self.assertEqual(sum(p.numel() for p in long.parameters()), 149_440 + (4096 - 512) * 64)
        self.assertEqual(long.architecture, "TinyCausalLM(layers=2, d_model=64, heads=4, context=4096)")

    def test_unknown_size_lists_the_known_ones(self):
        with self.assertRaises(PolicyLoadError) as cm:
            load_policy("builtin:huge", device="cpu")
        self.assertIn("builtin:tiny", str(cm.exception))
        self.assertIn("builtin:small", str(cm.exception))

    def test_deterministic_init(self):
        a, b, c = (TinyCausalLM(BUILTIN_SIZES["tiny"], seed=s) for s in (1, 1, 2))
        self.assertTrue(helpers.same_weights(list(a.parameters()), list(b.parameters())))
        self.assertFalse(helpers.same_weights(list(a.parameters()), list(c.parameters())))

    def test_left_padding_does_not_change_logprobs(self):
        policy = load_policy("builtin:tiny", seed=1, device="cpu", dtype="float64")
        prompts, comps = [[256, 65, 66, 67, 68, 69], [256, 70]], [[71, 72, 73], [74]]
        together = pack(prompts, comps, policy.pad_id, "cpu")
        with torch.no_grad():
            lp, _ = completion_logprobs(policy, together)
            rows = together.rows(lp)
            for i in range(2):
                alone = pack([prompts[i]], [comps[i]], policy.pad_id, "cpu")
                single = alone.rows(completion_logprobs(policy, alone)[0])[0]
                for x, y in zip(rows[i], single):
                    self.assertAlmostEqual(x, y, delta=1e-12)

    def test_kv_cache_sampling_logprobs_equal_a_full_forward(self):
        learner = helpers.make_learner(seed=4, dtype="float64")
        policy = learner.policy
        specs = [RowSpec((256, 72, 105), 12, frozenset()), RowSpec((256, 1, 2, 3, 4, 5, 6, 7), 9, frozenset())]
        rows = sample_rows(policy, specs, 1.0, 1.0, (), torch.Generator().manual_seed(0))
        seqs = [ScoredSequence(str(i), s.prompt_ids, r.token_ids) for i, (s, r) in enumerate(zip(specs, rows))]
        full = learner.compute_logprobs(seqs)
        for r, f in zip(rows, full):
            self.assertEqual(len(r.logprobs), len(f))
            for x, y in zip(r.logprobs, f):
                self.assertAlmostEqual(x, y, delta=1e-10)
        # float32 agrees to float32 precision
        learner32 = helpers.make_learner(seed=4)
        rows32 = sample_rows(learner32.policy, specs[:1], 1.0, 1.0, (), torch.Generator().manual_seed(0))
        full32 = learner32.compute_logprobs([ScoredSequence("x", specs[0].prompt_ids, rows32[0].token_ids)])[0]
        for x, y in zip(rows32[0].logprobs, full32):
            self.assertAlmostEqual(x, y, delta=1e-4)

    def test_gradient_checkpointing_gives_the_same_gradients(self):
        grads = []
        for ckpt in (False, True):
            policy = load_policy("builtin:tiny", seed=2, device="cpu", dtype="float64", gradient_checkpointing=ckpt)
            batch = pack([[256, 1, 2], [256, 3]], [[4, 5], [6, 7, 8]], policy.pad_id, "cpu")
            lp, _ = completion_logprobs(policy, batch)
            (lp * batch.valid).sum().backward()
            grads.append([p.grad.clone() for p in policy.model.parameters()])
        for a, b in zip(*grads):
            self.assertTrue(torch.allclose(a, b, atol=1e-12))

    def test_positions_beyond_the_context_are_refused(self):
        m = build_builtin("builtin:tiny", 0)
        with self.assertRaises(ValueError):
            m(torch.zeros(1, 513, dtype=torch.long))


if __name__ == "__main__":
    unittest.main()
