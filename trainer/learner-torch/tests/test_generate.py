"""Generate: shapes and ids, seeded determinism, the learner's own stream, EOS / stop strings /
length, context capping, tempered and nucleus behaviour logprobs, and input errors."""

import math
import unittest

import torch

import helpers
from reward_mesh_learner.batching import pack
from reward_mesh_learner.contract import ChatMessage, GenerateRequest, PromptSpec
from reward_mesh_learner.errors import LearnerInputError
from reward_mesh_learner.sampling import first_stop
from reward_mesh_learner.tokenizer import BOS_ID, EOS_ID


class Basics(unittest.TestCase):
    def setUp(self):
        self.learner = helpers.make_learner(seed=1)

    def test_n_per_prompt_in_order_with_prompt_ids(self):
        chat = PromptSpec("chat", context_key="k2", messages=(ChatMessage("user", "hi"),), max_tokens=3)
        out = helpers.generate(self.learner, n=3, prompts=(helpers.PROMPT, chat), max_new_tokens=5)
        self.assertEqual(len(out), 6)
        for k, c in enumerate(out):
            p = (helpers.PROMPT, chat)[k // 3]
            self.assertEqual((c.prompt_id, c.context_key, c.index, c.policy_version), (p.prompt_id, p.context_key, k % 3, 0))
            self.assertEqual(c.prompt_token_ids, self.learner.policy.tokenizer.encode_prompt(p.text, p.messages))
            self.assertEqual(c.prompt_token_ids[0], BOS_ID)
            self.assertEqual(len(c.logprobs), len(c.token_ids))
            self.assertTrue(all(lp <= 0 and math.isfinite(lp) for lp in c.logprobs))
            self.assertLessEqual(len(c.token_ids), 5 if k < 3 else 3)
            self.assertEqual(c.truncated, c.finish_reason == "length")
            if c.finish_reason == "stop":
                self.assertEqual(c.token_ids[-1], EOS_ID)

    def test_seeded_determinism(self):
        a = helpers.generate(self.learner, n=6, seed=1234)
        b = helpers.generate(self.learner, n=6, seed=1234)
        c = helpers.generate(self.learner, n=6, seed=4321)
        self.assertEqual(a, b)
        self.assertNotEqual([x.token_ids for x in a], [x.token_ids for x in c])

    def test_unseeded_calls_advance_the_learner_stream(self):
        req = GenerateRequest(prompts=[helpers.PROMPT], n=4, max_new_tokens=6)
        a, b = self.learner.generate(req), self.learner.generate(req)
        self.assertNotEqual([x.token_ids for x in a], [x.token_ids for x in b])
        again = helpers.make_learner(seed=1)
        self.assertEqual(again.generate(req), a, "the stream is a function of the learner seed")


class FinishReasons(unittest.TestCase):
    def test_eos_is_kept_with_its_logprob_and_left_out_of_text(self):
        learner = helpers.biased_learner({EOS_ID: 40.0})
        out = helpers.generate(learner, n=2, max_new_tokens=8)
        for c in out:
            self.assertEqual(c.token_ids, [EOS_ID])
            self.assertEqual((c.text, c.finish_reason, c.truncated), ("", "stop", False))
            self.assertEqual(c.matched_stop, "", "end-of-sequence is no stop string")
            self.assertAlmostEqual(c.logprobs[0], 0.0, delta=1e-6)
        # Also when stop strings were asked for but EOS came first.
        for c in helpers.generate(learner, n=2, max_new_tokens=8, stop=["a", "</tool_call>"]):
            self.assertEqual((c.token_ids, c.finish_reason, c.matched_stop), ([EOS_ID], "stop", ""))

    def test_prompt_stop_token_ends_a_completion(self):
        learner = helpers.biased_learner({ord("z"): 40.0, EOS_ID: -100.0})
        p = PromptSpec("p", text="x", stop_token=ord("z"), max_tokens=5)
        c = learner.generate(GenerateRequest(prompts=[p], n=1, seed=0))[0]
        self.assertEqual((c.token_ids, c.text, c.finish_reason, c.matched_stop), ([ord("z")], "", "stop", ""))

    def test_stop_string_cuts_the_text_and_keeps_the_tokens(self):
        a, b = ord("a"), ord("b")
        learner = helpers.biased_learner({a: 40.0, b: 40.0, EOS_ID: -100.0})
        out = helpers.generate(learner, n=16, max_new_tokens=30, stop=["b"])
        for c in out:
            self.assertEqual(c.finish_reason, "stop")
            self.assertEqual(c.token_ids[-1], b)
            self.assertEqual(c.text, "a" * (len(c.token_ids) - 1))
            self.assertEqual(c.matched_stop, "b")
            self.assertFalse(c.truncated)
        multi = helpers.generate(learner, n=8, max_new_tokens=30, stop=["bb", "ba"])
        matched = set()
        for c in multi:
            text = bytes(c.token_ids).decode()
            if c.finish_reason == "stop":
                cut = min(i for i in (text.find("bb"), text.find("ba")) if i >= 0)
                self.assertEqual(c.text, text[:cut])
                self.assertEqual(cut + 2, len(text), "generation ends as soon as a stop string appears")
                # The stop string it ended on, as given: text + matched_stop is the tokens' text.
                self.assertEqual(c.matched_stop, text[cut:])
                self.assertEqual(c.text + c.matched_stop, text)
                matched.add(c.matched_stop)
            else:
                self.assertEqual(c.matched_stop, "")
        self.assertEqual(matched, {"bb", "ba"}, "both stop strings were hit and told apart")

    def test_matched_stop_is_the_one_the_text_is_cut_at(self):
        # "xb" and "b" complete at the same token; "xb" starts first, so the text is cut before it.
        x, b = ord("x"), ord("b")
        learner = helpers.biased_learner({x: 40.0, b: 39.0, EOS_ID: -100.0})
        out = helpers.generate(learner, n=16, max_new_tokens=30, stop=["b", "xb", "</tool_call>"])
        hit = 0
        for c in out:
            text = bytes(c.token_ids).decode()
            self.assertEqual(c.finish_reason, "stop")
            if text.endswith("xb"):
                self.assertEqual((c.matched_stop, c.text), ("xb", text[:-2]))
                hit += 1
            else:  # a "b" right after the prompt
                self.assertEqual((c.matched_stop, c.text), ("b", text[:-1]))
        self.assertGreater(hit, 0)

    def test_first_stop_rule(self):
        # The earliest occurrence; of those starting there, the shortest (its match completed first).
        self.assertEqual(first_stop("say </tool_call> x", ["x", "</tool_call>", "</tool"]), (4, "</tool"))
        self.assertEqual(first_stop("abcd", ["c", "abcd"]), (0, "abcd"))
        self.assertEqual(first_stop("abc", ["z"]), None)
        self.assertEqual(first_stop("ab", ["b", "b"]), (1, "b"))

    def test_length_finish(self):
        learner = helpers.biased_learner({EOS_ID: -100.0})
        for c in helpers.generate(learner, n=4, max_new_tokens=5):
            self.assertEqual((len(c.token_ids), c.finish_reason, c.truncated), (5, "length", True))
            self.assertEqual(c.text, learner.policy.tokenizer.decode(c.token_ids))
            self.assertEqual(c.matched_stop, "")
        # The budget ran out before any stop string appeared.
        for c in helpers.generate(learner, n=4, max_new_tokens=5, stop=["</tool_call>"]):
            self.assertEqual((c.finish_reason, c.matched_stop), ("length", ""))

    def test_prompt_max_tokens_wins_over_max_new_tokens(self):
        learner = helpers.biased_learner({EOS_ID: -100.0})
        p = PromptSpec("p", text="x", max_tokens=2)
        out = learner.generate(GenerateRequest(prompts=[p], n=2, seed=0, max_new_tokens=9))
        self.assertEqual([len(c.token_ids) for c in out], [2, 2])

    def test_completions_are_capped_by_the_context(self):
        learner = helpers.biased_learner({EOS_ID: -100.0})
        p = PromptSpec("long", text="y" * 505)  # 506 tokens with BOS; the context is 512
        c = learner.generate(GenerateRequest(prompts=[p], n=1, seed=0, max_new_tokens=64))[0]
        self.assertEqual((len(c.token_ids), c.finish_reason), (6, "length"))


class BehaviourLogprobs(unittest.TestCase):
    def first_token_logprobs(self, learner, prompt_ids):
        batch = pack([prompt_ids], [[0]], learner.policy.pad_id, "cpu")
        with torch.no_grad():
            out = learner.policy.forward(batch.input_ids, batch.attention_mask, batch.position_ids)
        return out.logits[0, -2].double()  # the position after the prompt

    def test_temperature_and_top_p(self):
        learner = helpers.make_learner(seed=5, dtype="float64")
        for temperature, top_p in ((0.7, 1.0), (1.3, 0.5), (1.0, 0.05)):
            out = helpers.generate(learner, n=12, max_new_tokens=1, temperature=temperature, top_p=top_p)
            logits = self.first_token_logprobs(learner, out[0].prompt_token_ids)
            lp = torch.log_softmax(logits / temperature, -1)
            p_sorted, order = torch.sort(lp.exp(), descending=True, stable=True)
            keep = (p_sorted.cumsum(-1) - p_sorted) < top_p
            nucleus = set(order[keep].tolist())
            mass = float(p_sorted[keep].sum())
            for c in out:
                tok = c.token_ids[0]
                self.assertIn(tok, nucleus)
                expected = float(lp[tok]) - (math.log(mass) if top_p < 1 else 0.0)
                self.assertAlmostEqual(c.logprobs[0], expected, delta=1e-9, msg=(temperature, top_p))
        # A tiny nucleus keeps only the most likely token: probability 1 after renormalisation.
        c = helpers.generate(learner, n=1, max_new_tokens=1, top_p=1e-9)[0]
        self.assertAlmostEqual(c.logprobs[0], 0.0, delta=1e-12)


class InputErrors(unittest.TestCase):
    def setUp(self):
        self.learner = helpers.make_learner()

    def expect(self, field, req, *mentions):
        with self.assertRaises(LearnerInputError) as cm:
            self.learner.generate(req)
        self.assertEqual(cm.exception.field, field, str(cm.exception))
        for m in mentions:
            self.assertIn(m, str(cm.exception))

    def test_errors(self):
        frag = PromptSpec("bandit", text="", vocabulary=("a", "b"))
        self.expect("prompts[0].vocabulary", GenerateRequest([frag], 1), "text policy", "bandit")
        self.expect("prompts[1].text", GenerateRequest([helpers.PROMPT, PromptSpec("empty")], 1), "empty")
        cont = PromptSpec("cont", text="x", prefix_token_ids=(1, 2))
        self.expect("prompts[0].prefixTokenIds", GenerateRequest([cont], 1), "text policy", "as text", "cont")
        self.expect("prompts[0]", GenerateRequest([PromptSpec("big", text="x" * 600)], 1), "601", "512")
        self.expect("prompts[0]", GenerateRequest([PromptSpec("full", text="x" * 511)], 1), "512")
        self.expect("n", GenerateRequest([helpers.PROMPT], 0), "0")
        self.expect("temperature", GenerateRequest([helpers.PROMPT], 1, temperature=0.0))
        self.expect("topP", GenerateRequest([helpers.PROMPT], 1, top_p=1.5), "1.5")
        self.expect("prompts[0].stopToken", GenerateRequest([PromptSpec("s", text="x", stop_token=300)], 1), "300")
        self.expect("stop[0]", GenerateRequest([helpers.PROMPT], 1, stop=[""]))
        self.expect("prompts[0].promptId", GenerateRequest([PromptSpec("", text="x")], 1))

    def test_prompt_ids_beyond_the_model_vocabulary(self):
        # A tokenizer larger than the model's embedding (HF added tokens without a resize).
        self.learner.policy.vocab_size = 200
        self.expect("prompts[0]", GenerateRequest([PromptSpec("hi", text="\xff")], 1), "outside the model's vocabulary", "200")

    def test_a_refused_request_does_not_advance_the_stream(self):
        req = GenerateRequest(prompts=[helpers.PROMPT], n=3, max_new_tokens=4)
        with self.assertRaises(LearnerInputError):
            self.learner.generate(GenerateRequest([helpers.PROMPT, PromptSpec("empty")], 2))
        self.assertEqual(self.learner.generate(req), helpers.make_learner().generate(req))


if __name__ == "__main__":
    unittest.main()
