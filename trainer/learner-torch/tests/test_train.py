"""TrainStep: metrics, exact old = current with one epoch and one mini-batch, micro-batch gradient
accumulation = full batch (float64), idempotent replay, staleness, bad input changing nothing,
KL to the reference, truncation masking, and a learning test through ComputeLogprobs."""

import dataclasses
import math
import unittest

import torch

import helpers
from reward_mesh_learner.contract import LossConfig, OptimConfig, ScoredSequence
from reward_mesh_learner.errors import LearnerInputError
from reward_mesh_learner.learner import fingerprint_of, hash_string
from reward_mesh_learner.losses import ObjectiveConfig
from reward_mesh_learner.training import prepare_step, run_optimizer_steps
from reward_mesh_learner.validate import validate_train_step, PolicyLimits

METRICS = (
    "loss clipFraction klRef approxKlOld entropy gradNorm nTokens nSamples nDroppedStale clipFractionLow "
    "clipFractionHigh dualClipFraction rolloutIsWeightMean gradNormMax nOptimizerSteps nMaskedTruncated "
    "advantageMean lr"
).split()


class Step(unittest.TestCase):
    def test_one_step_metrics_and_version(self):
        learner = helpers.make_learner(seed=1)
        out = helpers.generate(learner, n=8)
        res = learner.train_step(helpers.step_request(helpers.samples_from(out)))
        self.assertEqual((res.policy_version, res.replayed), (1, False))
        for k in METRICS:
            self.assertIn(k, res.metrics)
        m = res.metrics
        self.assertEqual(m["clipFraction"], 0.0)  # old = current exactly with 1 epoch × 1 mini-batch
        self.assertEqual(m["approxKlOld"], 0.0)
        self.assertEqual(m["klRef"], 0.0)  # the policy is still the reference
        self.assertEqual(m["nSamples"], 8)
        self.assertEqual(m["nTokens"], sum(len(c.token_ids) for c in out))
        self.assertEqual((m["nOptimizerSteps"], m["lr"], m["rolloutIsWeightMean"]), (1, 1e-3, 1.0))
        self.assertGreater(m["gradNorm"], 0)
        self.assertGreater(m["entropy"], 0)
        self.assertEqual(learner.info().policy_version, 1)
        self.assertTrue(all(c.policy_version == 1 for c in helpers.generate(learner, n=2)))

    def test_epochs_mini_batches_and_kl(self):
        learner = helpers.make_learner(seed=2)
        out = helpers.generate(learner, n=8)
        learner.train_step(helpers.step_request(helpers.samples_from(out), key="warm", optim=OptimConfig(lr=1e-2)))
        out = helpers.generate(learner, n=8)
        loss = dataclasses.replace(helpers.DAPO, kl_beta=0.1, dual_clip_c=3.0)
        res = learner.train_step(helpers.step_request(helpers.samples_from(out), key="k2", loss=loss, optim=OptimConfig(lr=5e-2, epochs=3, mini_batches=2)))
        m = res.metrics
        self.assertEqual(m["nOptimizerSteps"], 6)
        self.assertGreater(m["klRef"], 0)
        self.assertGreater(m["approxKlOld"], 0)
        self.assertGreaterEqual(m["gradNormMax"], m["gradNorm"])
        self.assertAlmostEqual(m["clipFraction"], m["clipFractionLow"] + m["clipFractionHigh"] + m["dualClipFraction"], delta=1e-12)

    def test_every_loss_type_and_sgd(self):
        learner = helpers.make_learner(seed=3)
        out = helpers.generate(learner, n=4)
        for i, lt in enumerate(("grpo", "dr_grpo", "dapo", "cispo", "bnpo")):
            loss = LossConfig(lt, 0.2, 0.28, kl_beta=0.0, max_completion_length=8)
            opt = OptimConfig(lr=1e-3, optimizer="sgd" if i % 2 else "adam", max_grad_norm=math.inf)
            res = learner.train_step(helpers.step_request(helpers.samples_from(out, prefix=lt), key=lt, loss=loss, optim=opt))
            self.assertTrue(all(math.isfinite(v) for v in res.metrics.values()), lt)
        loss = LossConfig("cispo", 0.2, 5.0, cispo_mode="upper-cap", aggregation="seq-mean-token-sum")
        learner.train_step(helpers.step_request(helpers.samples_from(out, prefix="u"), key="upper", loss=loss))
        self.assertEqual(set(learner.optimizers), {"adam", "sgd"})

    def test_mask_truncated_and_loss_mask(self):
        learner = helpers.make_learner(seed=4)
        out = helpers.generate(learner, n=4, max_new_tokens=6)
        samples = [dataclasses.replace(s, truncated=False) for s in helpers.samples_from(out)]
        samples[0] = dataclasses.replace(samples[0], truncated=True)
        samples[1] = dataclasses.replace(samples[1], loss_mask=tuple([0] + [1] * (len(samples[1].token_ids) - 1)))
        loss = dataclasses.replace(helpers.DAPO, mask_truncated=True)
        res = learner.train_step(helpers.step_request(samples, loss=loss))
        expected = sum(len(s.token_ids) for s in samples) - len(samples[0].token_ids) - 1
        self.assertEqual(res.metrics["nTokens"], expected)
        self.assertEqual(res.metrics["nMaskedTruncated"], 1)

    def test_fingerprint_matches_the_typescript_hash(self):
        self.assertEqual(hash_string("a"), 0xE40C292C)  # FNV-1a 32 of "a"
        self.assertEqual(hash_string(""), 0x811C9DC5)
        samples = helpers.samples_from(helpers.generate(helpers.make_learner(), n=2))
        fp = fingerprint_of(helpers.step_request(samples, step=7))
        self.assertTrue(fp.startswith("step=7;samples=2;ids="))


class MicroBatches(unittest.TestCase):
    """Gradient accumulation over micro-batches equals the full mini-batch gradient (float64)."""

    def gradients(self, micro: int, aggregation: str, epochs: int = 1):
        learner = helpers.make_learner(seed=6, dtype="float64", micro_batch_size=micro)
        out = helpers.generate(learner, n=5, max_new_tokens=7, prompts=(helpers.PROMPT, helpers.PromptSpec("q", text="Hello there")))
        samples = helpers.samples_from(out, advantage=lambda c, i: (i % 3) - 1.0)
        samples[2] = dataclasses.replace(samples[2], loss_mask=tuple(0 for _ in samples[2].token_ids))
        loss = LossConfig("dr_grpo", 0.2, 0.28, kl_beta=0.05, max_completion_length=7, aggregation=aggregation, rollout_is_cap=2.0)
        r = validate_train_step(helpers.step_request(samples, loss=loss), PolicyLimits(259, 512, 0))
        prepared = prepare_step(learner.policy, samples, r.loss, 1, micro, epochs)
        cfg = ObjectiveConfig("dr_grpo", aggregation, 0.2, 0.28, 0.0, 0.05, 7, "two-sided")

        class Capture(torch.optim.SGD):
            grads = None

            def step(self, closure=None):
                Capture.grads = [p.grad.clone() for p in learner.policy.model.parameters()]

        opt = Capture(learner.policy.trainable_parameters(), lr=0.0)
        stats = run_optimizer_steps(learner.policy, prepared, cfg, opt, math.inf, 1)
        return Capture.grads, stats

    def test_accumulated_gradients_equal_the_full_batch(self):
        for aggregation in ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"):
            full, s_full = self.gradients(0, aggregation)
            for micro in (1, 3):
                acc, s_acc = self.gradients(micro, aggregation)
                self.assertAlmostEqual(s_acc.loss_sum, s_full.loss_sum, delta=1e-12)
                self.assertEqual(s_acc.token_evals, s_full.token_evals)
                for a, b in zip(full, acc):
                    self.assertTrue(torch.allclose(a, b, rtol=1e-10, atol=1e-13), (aggregation, micro))

    def test_precomputed_old_logprobs_equal_the_forwards_own(self):
        # With one optimizer step `old` is the forward's own logprobs; with more it is computed up front.
        # The first optimizer step must not tell the difference.
        own, s_own = self.gradients(2, "token-mean", epochs=1)
        pre, s_pre = self.gradients(2, "token-mean", epochs=2)
        self.assertEqual((s_pre.clipped, s_pre.approx_kl_sum), (0, 0.0))
        self.assertEqual(s_pre.loss_sum, s_own.loss_sum)
        for a, b in zip(own, pre):
            self.assertTrue(torch.equal(a, b))

    def test_micro_batched_learners_take_the_same_step(self):
        probes = []
        for micro in (0, 2):
            learner = helpers.make_learner(seed=7, dtype="float64", micro_batch_size=micro)
            out = helpers.generate(learner, n=6)
            learner.train_step(helpers.step_request(helpers.samples_from(out), optim=OptimConfig(lr=1e-2, optimizer="sgd")))
            probes.append(helpers.probe(learner))
        for a, b in zip(*probes):
            for x, y in zip(a, b):
                self.assertAlmostEqual(x, y, delta=1e-10)


class Idempotency(unittest.TestCase):
    def test_replay_and_key_reuse(self):
        learner = helpers.make_learner(seed=8)
        samples = helpers.samples_from(helpers.generate(learner, n=6))
        req = helpers.step_request(samples, key="run-a/step-7", step=7)
        first = learner.train_step(req)
        w = helpers.weights(learner)
        retry = learner.train_step(req)
        self.assertTrue(retry.replayed)
        self.assertEqual((retry.policy_version, retry.metrics), (first.policy_version, first.metrics))
        self.assertTrue(helpers.same_weights(w, helpers.weights(learner)), "no second update")
        self.assertEqual(learner.info().policy_version, 1)
        with self.assertRaises(LearnerInputError) as cm:
            learner.train_step(dataclasses.replace(req, samples=samples[1:]))
        self.assertEqual(cm.exception.field, "idempotencyKey")
        self.assertIn("run-a/step-7", str(cm.exception))

    def test_old_keys_are_forgotten(self):
        learner = helpers.make_learner(idempotency_cache_size=2)
        samples = helpers.samples_from(helpers.generate(learner, n=2))
        for k in ("a", "b", "c"):
            learner.train_step(helpers.step_request(samples, key=k))
        self.assertEqual(list(learner.idempotency), ["b", "c"])


class Staleness(unittest.TestCase):
    def test_stale_samples_are_dropped_and_counted(self):
        learner = helpers.make_learner(seed=9)
        old = helpers.generate(learner, n=8, seed=1)
        for k in ("s1", "s2"):
            learner.train_step(helpers.step_request(helpers.samples_from(helpers.generate(learner, n=4), prefix=k), key=k, optim=OptimConfig(lr=1e-2)))
        fresh = helpers.generate(learner, n=8, seed=2)
        self.assertTrue(all(c.policy_version == 2 for c in fresh))
        res = learner.train_step(helpers.step_request(helpers.samples_from(old) + helpers.samples_from(fresh), key="s3", max_staleness=1))
        self.assertEqual((res.metrics["nDroppedStale"], res.metrics["nSamples"], res.policy_version), (8, 8, 3))
        loss = dataclasses.replace(helpers.DAPO, rollout_is_cap=2.0)
        kept = learner.train_step(helpers.step_request(helpers.samples_from(old), key="s4", loss=loss, max_staleness=3))
        self.assertEqual((kept.metrics["nDroppedStale"], kept.metrics["nSamples"]), (0, 8))
        self.assertTrue(0 < kept.metrics["rolloutIsWeightMean"] <= 2)
        self.assertNotEqual(kept.metrics["rolloutIsWeightMean"], 1.0, "stale samples are importance-weighted")
        w = helpers.weights(learner)
        none = learner.train_step(helpers.step_request(helpers.samples_from(old), key="s5", max_staleness=0))
        self.assertEqual((none.metrics["nSamples"], none.metrics["nDroppedStale"], none.policy_version), (0, 8, 5))
        self.assertEqual(none.metrics["nOptimizerSteps"], 0)
        self.assertTrue(helpers.same_weights(w, helpers.weights(learner)))


class BadInput(unittest.TestCase):
    """Each bad request is refused with its field and sample named, and changes nothing."""

    def test_bad_requests_change_nothing(self):
        learner = helpers.make_learner(seed=10)
        good = helpers.samples_from(helpers.generate(learner, n=4))
        sid = [s.sample_id for s in good]

        def patched(i, **kw):
            return [dataclasses.replace(s, **kw) if j == i else s for j, s in enumerate(good)]

        n0 = len(good[0].token_ids)
        cases = [
            ("samples[1].advantage", patched(1, advantage=math.nan), {}, ["NaN", sid[1]]),
            ("samples[1].advantage", patched(1, advantage=math.inf), {}, ["Infinity"]),
            ("samples[2].tokenIds[1]", patched(2, token_ids=(1, 259, 3)[: len(good[2].token_ids)] + good[2].token_ids[3:]), {}, ["259", sid[2]]),
            ("samples[0].rolloutLogprobs", patched(0, rollout_logprobs=(-1.0, -1.0) if n0 != 2 else (-1.0,)), {}, ["entries", sid[0]]),
            ("samples[0].lossMask", patched(0, loss_mask=(1,) * (n0 + 1)), {}, [sid[0]]),
            ("samples[0].lossMask[0]", patched(0, loss_mask=(2,) * n0), {}, ["not 0 or 1"]),
            ("samples[0].promptTokenIds", patched(0, prompt_token_ids=()), {}, ["empty", sid[0]]),
            ("samples[3].promptTokenIds[0]", patched(3, prompt_token_ids=(-1, 5)), {}, ["-1"]),
            ("samples[0].policyVersion", patched(0, policy_version=3), {}, ["ahead", sid[0]]),
            ("samples[1].sampleId", patched(1, sample_id=sid[0]), {}, ["repeats"]),
            ("samples[0]", patched(0, prompt_token_ids=(1,) * 510), {}, ["512"]),
            ("samples[0].vocabularySize", patched(0, vocabulary_size=4), {}, ["259"]),
            ("samples", [], {}, ["empty"]),
            ("loss.epsLow", good, {"loss": dataclasses.replace(helpers.DAPO, eps_low=1.5)}, ["1.5"]),
            ("loss.maxCompletionLength", good, {"loss": LossConfig("dr_grpo", 0.2, 0.2)}, ["seq-mean-token-sum-norm"]),
            ("loss.epsHigh", good, {"loss": LossConfig("cispo", 0.2, 0.28, cispo_mode="upper-cap")}, ["upper-cap"]),
            ("loss.dualClipC", good, {"loss": dataclasses.replace(helpers.DAPO, dual_clip_c=0.5)}, ["0.5"]),
            ("loss.lossType", good, {"loss": dataclasses.replace(helpers.DAPO, loss_type="ppo")}, ["grpo"]),
            ("optim.lr", good, {"optim": OptimConfig(lr=0.0)}, ["0"]),
            ("optim.epochs", good, {"optim": OptimConfig(lr=1e-3, epochs=0)}, []),
            ("optim.optimizer", good, {"optim": OptimConfig(lr=1e-3, optimizer="lion")}, ["adam"]),
        ]
        w, probe = helpers.weights(learner), helpers.probe(learner)
        for field, samples, extra, mentions in cases:
            with self.assertRaises(LearnerInputError, msg=field) as cm:
                learner.train_step(helpers.step_request(samples, key="bad", **extra))
            self.assertEqual(cm.exception.field, field, str(cm.exception))
            for m in mentions:
                self.assertIn(m, str(cm.exception), field)
        self.assertEqual(learner.info().policy_version, 0, "no bad request stepped")
        self.assertTrue(helpers.same_weights(w, helpers.weights(learner)))
        self.assertEqual(probe, helpers.probe(learner))
        self.assertEqual(learner.optimizers, {})
        ok = learner.train_step(helpers.step_request(good, key="bad"))  # the key was not burnt
        self.assertEqual((ok.replayed, ok.policy_version), (False, 1))


class Learning(unittest.TestCase):
    def test_positive_advantages_raise_logprobs(self):
        learner = helpers.make_learner(seed=11)
        out = helpers.generate(learner, n=8, max_new_tokens=6)
        samples = helpers.samples_from(out, advantage=lambda c, i: 1.0 if i < 4 else -1.0)
        seqs = [ScoredSequence(s.sample_id, s.prompt_token_ids, s.token_ids) for s in samples]
        before = [sum(x) for x in learner.compute_logprobs(seqs)]
        for k in range(3):
            learner.train_step(helpers.step_request(samples, key=f"l{k}", optim=OptimConfig(lr=3e-3)))
            samples = [dataclasses.replace(s, policy_version=k + 1) for s in samples]
        after = [sum(x) for x in learner.compute_logprobs(seqs)]
        for i in range(8):
            if i < 4:
                self.assertGreater(after[i], before[i], i)
            else:
                self.assertLess(after[i], before[i], i)


if __name__ == "__main__":
    unittest.main()
