"""The supervised warm-up: it teaches the examples' responses, and bad files are refused with the line."""

import io
import json
import os
import shutil
import tempfile
import unittest

import helpers
from reward_mesh_learner.contract import ChatMessage, ScoredSequence
from reward_mesh_learner.errors import WarmupError
from reward_mesh_learner.learner import LearnerOptions, TorchLearner
from reward_mesh_learner.policy import load_policy
from reward_mesh_learner.tokenizer import EOS_ID
from reward_mesh_learner.warmup import load_examples, run_warmup


class Warmup(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="torch-learner-warmup-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, *lines):
        path = os.path.join(self.dir, f"warm{len(os.listdir(self.dir))}.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def test_warmup_teaches_the_responses(self):
        path = self.write(
            json.dumps({"prompt": "Q: 2+2=", "response": "4"}),
            "",
            json.dumps({"messages": [{"role": "user", "content": "say ok"}], "response": "ok"}),
        )
        policy = load_policy("builtin:tiny", seed=0, device="cpu")
        tok = policy.tokenizer
        seqs = [
            ScoredSequence("a", tok.encode_prompt("Q: 2+2="), tok.encode("4") + [EOS_ID]),
            ScoredSequence("b", tok.encode_prompt("", [ChatMessage("user", "say ok")]), tok.encode("ok") + [EOS_ID]),
        ]
        before = [sum(x) for x in TorchLearner(policy).compute_logprobs(seqs)]
        log = io.StringIO()
        summary = run_warmup(policy, path, steps=30, lr=3e-3, batch=2, seed=0, log=log)
        learner = TorchLearner(policy, LearnerOptions(provenance=summary.sentence("warm.jsonl")))
        after = [sum(x) for x in learner.compute_logprobs(seqs)]
        for b, a in zip(before, after):
            self.assertGreater(a, b + 1.0)
        self.assertLess(summary.last_loss, summary.first_loss)
        self.assertEqual(log.getvalue().count("warm-up: step"), 10)
        self.assertIn("Warmed up before serving with 30 supervised steps on 2 examples", learner.info().description)
        self.assertEqual(learner.info().policy_version, 0)
        # The reference is the warmed-up model: the first step's KL to it is 0.
        out = helpers.generate(learner, n=4)
        res = learner.train_step(helpers.step_request(helpers.samples_from(out)))
        self.assertEqual(res.metrics["klRef"], 0.0)

    def test_bad_files_name_the_line(self):
        policy = load_policy("builtin:tiny", seed=0, device="cpu")
        cases = [
            (self.write(json.dumps({"prompt": "x", "response": "y"}), "{not json"), "line 2"),
            (self.write(json.dumps({"prompt": "x"})), "line 1"),
            (self.write(json.dumps({"messages": "hi", "response": "y"})), '"messages"'),
            (self.write(json.dumps({"prompt": "x" * 600, "response": "y"})), "512"),
            (self.write(""), "no examples"),
            (os.path.join(self.dir, "missing.jsonl"), "missing.jsonl"),
        ]
        for path, mention in cases:
            with self.assertRaises(WarmupError) as cm:
                load_examples(policy, path)
            self.assertIn(mention, str(cm.exception))


if __name__ == "__main__":
    unittest.main()
