"""Checkpoints: an atomic directory that restores an identical learner (weights, reference, Adam
moments, version, random stream, idempotency cache)."""

import json
import os
import shutil
import tempfile
import unittest

import helpers
from reward_mesh_learner.checkpoint import CHECKPOINT_FORMAT
from reward_mesh_learner.contract import GenerateRequest, OptimConfig
from reward_mesh_learner.errors import CheckpointError, LearnerInputError
from reward_mesh_learner.learner import LearnerOptions, TorchLearner


class Checkpoints(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="torch-learner-ckpt-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_round_trip(self):
        learner = helpers.make_learner(seed=12)
        c1 = helpers.step_request(helpers.samples_from(helpers.generate(learner, n=6)), key="c1", step=1, optim=OptimConfig(lr=1e-2, epochs=2, mini_batches=2))
        learner.train_step(c1)
        learner.generate(GenerateRequest(prompts=[helpers.PROMPT], n=3, max_new_tokens=4))  # advances the own stream
        path = learner.save_checkpoint(os.path.join(self.dir, "ckpt"))
        self.assertEqual(path, os.path.join(self.dir, "ckpt"))
        self.assertEqual(sorted(os.listdir(path)), ["learner.json", "model.pt", "optimizer.pt", "reference.pt"])
        with open(os.path.join(path, "learner.json"), encoding="utf-8") as f:
            manifest = json.load(f)
        self.assertEqual((manifest["format"], manifest["policyVersion"]), (CHECKPOINT_FORMAT, 1))

        restored = TorchLearner.from_checkpoint(path, device="cpu")
        self.assertEqual(restored.info(), learner.info())
        unseeded = GenerateRequest(prompts=[helpers.PROMPT], n=4, max_new_tokens=6)
        self.assertEqual(restored.generate(unseeded), learner.generate(unseeded))
        replay = restored.train_step(c1)
        self.assertEqual((replay.replayed, replay.policy_version), (True, 1))
        # The next step (Adam moments, reference for the KL) gives identical results and weights.
        samples = helpers.samples_from(helpers.generate(learner, n=6, seed=5), prefix="c2")
        a = learner.train_step(helpers.step_request(samples, key="c2", optim=OptimConfig(lr=1e-2)))
        b = restored.train_step(helpers.step_request(samples, key="c2", optim=OptimConfig(lr=1e-2)))
        self.assertEqual(a, b)
        self.assertGreater(a.metrics["klRef"], 0)
        self.assertTrue(helpers.same_weights(helpers.weights(learner), helpers.weights(restored)))
        self.assertEqual(helpers.generate(learner, n=4, seed=9), helpers.generate(restored, n=4, seed=9))

    def test_runtime_options_are_kept_and_state_comes_from_the_checkpoint(self):
        learner = helpers.make_learner(seed=3, weight_decay=0.1)
        path = learner.save_checkpoint(os.path.join(self.dir, "c"))
        restored = TorchLearner.from_checkpoint(path, device="cpu", options=LearnerOptions(seed=99, micro_batch_size=2))
        self.assertEqual((restored.options.seed, restored.options.weight_decay, restored.options.micro_batch_size), (3, 0.1, 2))

    def test_overwrite_and_refusals(self):
        learner = helpers.make_learner()
        path = os.path.join(self.dir, "again")
        learner.save_checkpoint(path)
        learner.train_step(helpers.step_request(helpers.samples_from(helpers.generate(learner, n=2))))
        learner.save_checkpoint(path)  # replaces the earlier checkpoint
        self.assertEqual(TorchLearner.from_checkpoint(path, device="cpu").policy_version, 1)
        self.assertEqual([n for n in os.listdir(self.dir) if n != "again"], [], "no temporary directories left")
        other = os.path.join(self.dir, "other")
        os.makedirs(other)
        open(os.path.join(other, "precious.txt"), "w").close()
        with self.assertRaises(CheckpointError):
            learner.save_checkpoint(other)
        self.assertTrue(os.path.exists(os.path.join(other, "precious.txt")))
        with self.assertRaises(CheckpointError):
            TorchLearner.from_checkpoint(other, device="cpu")
        with self.assertRaises(LearnerInputError):
            learner.save_checkpoint("")


if __name__ == "__main__":
    unittest.main()
