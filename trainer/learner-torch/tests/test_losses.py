"""The per-token losses and aggregation modes against the spec's reference vectors (1e-6, float64),
and their gradients: analytic values, ties, clamping, and finite differences (gradcheck)."""

import math
import unittest

import torch

import helpers
from reward_mesh_learner.batching import logprobs_from_logits
from reward_mesh_learner.contract import LOSS_AGGREGATIONS, aggregation_for
from reward_mesh_learner.losses import (
    ObjectiveConfig,
    aggregate_loss,
    aggregation_weights,
    cispo_token_loss,
    cispo_weight,
    importance_ratio,
    k3_kl,
    ppo_clip_token_loss,
    rollout_is_weight,
    token_objective,
)

F64 = torch.float64
V = helpers.load_vectors()


def t(x, grad=False):
    return torch.tensor(x, dtype=F64, requires_grad=grad)


class ReferenceVectors(unittest.TestCase):
    def test_ppo_clip_higher(self):
        vec = V["j_ppo_clip_higher_token_loss"]
        self.assertEqual(len(vec["expected"]), 7)
        for row in vec["expected"]:
            r, a = t(row["ratio"]), t(row["A"])
            got = ppo_clip_token_loss(r, a, vec["eps_low"], vec["eps_high"]).loss
            self.assertAlmostEqual(float(got), row["loss"], delta=1e-6, msg=row)
            dual = ppo_clip_token_loss(r, a, vec["eps_low"], vec["eps_high"], dual_clip_c=3.0).loss
            self.assertAlmostEqual(float(dual), row["loss_dual_clip_c3"], delta=1e-6, msg=row)

    def test_cispo_both_modes(self):
        vec = V["j_cispo_token_loss"]
        modes = {row.get("mode") for row in vec["expected"]}
        self.assertEqual(modes, {None, "trl_eps_max_5"})
        for row in vec["expected"]:
            upper = row.get("mode") == "trl_eps_max_5"
            mode, eps_high = ("upper-cap", 5.0) if upper else ("two-sided", vec["eps_high"])
            logp = t(vec["logp"], grad=True)
            old = t(vec["logp"] - math.log(row["ratio"]))
            terms = cispo_token_loss(logp, old, t(row["A"]), vec["eps_low"], eps_high, mode)
            terms.loss.backward()
            self.assertAlmostEqual(float(terms.loss), row["loss"], delta=1e-6, msg=row)
            self.assertAlmostEqual(float(logp.grad), row["gradCoefWrtLogp"], delta=1e-6, msg=row)
            w = cispo_weight(t(row["ratio"]), vec["eps_low"], eps_high, mode)
            self.assertAlmostEqual(float(w), row["clippedWeight"], delta=1e-6, msg=row)

    def test_loss_aggregation(self):
        vec = V["k_loss_aggregation"]
        for mode in LOSS_AGGREGATIONS:
            got = aggregate_loss(vec["perTokenLoss"], mode, max_completion_length=vec["L_max"])
            self.assertAlmostEqual(got, vec["expected"][mode], delta=1e-6, msg=mode)

    def test_default_aggregation_per_loss_type(self):
        self.assertEqual(aggregation_for("grpo"), "seq-mean-token-mean")
        self.assertEqual(aggregation_for("dr_grpo"), "seq-mean-token-sum-norm")
        for lt in ("dapo", "cispo", "bnpo"):
            self.assertEqual(aggregation_for(lt), "token-mean")


class ClipSemantics(unittest.TestCase):
    def grad_wrt_ratio(self, ratio, a, **kw):
        r = t(ratio, grad=True)
        terms = ppo_clip_token_loss(r, t(a), 0.2, 0.28, **kw)
        terms.loss.backward()
        return float(r.grad), terms

    def test_gradient_only_through_the_unclipped_branch(self):
        self.assertEqual(self.grad_wrt_ratio(1.5, 1.0)[0], 0.0)  # clipped high
        self.assertEqual(self.grad_wrt_ratio(0.5, -1.0)[0], 0.0)  # clipped low
        self.assertEqual(self.grad_wrt_ratio(1.5, -1.0)[0], 1.0)  # unclipped: −A
        self.assertEqual(self.grad_wrt_ratio(0.5, 1.0)[0], -1.0)
        g, terms = self.grad_wrt_ratio(4.0, -1.0, dual_clip_c=3.0)
        self.assertEqual(g, 0.0)
        self.assertTrue(bool(terms.dual_clipped) and bool(terms.clipped))
        self.assertFalse(bool(terms.clipped_low) or bool(terms.clipped_high))

    def test_ties_go_to_the_unclipped_branch(self):
        # At r = 1 + ε_high (A > 0) and r = 1 − ε_low (A < 0) both branches are equal: full gradient −A
        # (torch.maximum would split it in half).
        for ratio, a in ((1.28, 2.0), (0.8, -3.0)):
            g, terms = self.grad_wrt_ratio(ratio, a)
            self.assertEqual(g, -a, (ratio, a))
            self.assertFalse(bool(terms.clipped))

    def test_clip_sides(self):
        r = t([1.5, 0.5, 1.1, 0.5, 1.5])
        a = t([1.0, -1.0, 1.0, 1.0, -1.0])
        terms = ppo_clip_token_loss(r, a, 0.2, 0.28)
        self.assertEqual(terms.clipped_high.tolist(), [True, False, False, False, False])
        self.assertEqual(terms.clipped_low.tolist(), [False, True, False, False, False])

    def test_log_ratio_is_clamped_with_zero_gradient(self):
        logp = t([30.0, -30.0, 5.0], grad=True)
        old = t([0.0, 0.0, 0.0])
        ratio = importance_ratio(logp, old)
        ratio.sum().backward()
        self.assertAlmostEqual(float(ratio[0]), math.exp(20), delta=1e-3)
        self.assertAlmostEqual(float(ratio[1]), math.exp(-20), delta=1e-15)
        self.assertEqual(logp.grad[:2].tolist(), [0.0, 0.0])
        self.assertAlmostEqual(float(logp.grad[2]), math.exp(5), delta=1e-9)

    def test_k3_kl_and_gradient(self):
        logp, ref = t(-1.3, grad=True), t(-0.4)
        kl = k3_kl(logp, ref)
        kl.backward()
        d = -0.4 + 1.3
        self.assertAlmostEqual(float(kl), math.exp(d) - d - 1, delta=1e-12)
        self.assertAlmostEqual(float(logp.grad), 1 - math.exp(d), delta=1e-12)
        self.assertTrue(torch.autograd.gradcheck(lambda x: k3_kl(x, t([-0.2, -2.0, -0.7])), (t([-1.0, -0.5, -0.7], True),)))

    def test_rollout_is_weight(self):
        w = rollout_is_weight(t([-1.0, -1.0, 0.0]), t([-2.0, -0.5, -40.0]), 2.0)
        self.assertAlmostEqual(float(w[0]), 2.0, delta=1e-12)  # e^1 capped at 2
        self.assertAlmostEqual(float(w[1]), math.exp(-0.5), delta=1e-12)
        self.assertAlmostEqual(float(w[2]), 2.0, delta=1e-12)  # exponent clamped at 20, then capped
        self.assertFalse(w.requires_grad)


class Aggregation(unittest.TestCase):
    def test_weights(self):
        mask = t([[1, 1, 0], [0, 0, 0], [1, 1, 1]])
        tm = aggregation_weights(mask, "token-mean")
        self.assertTrue(torch.allclose(tm, mask / 5))
        sm = aggregation_weights(mask, "seq-mean-token-mean")
        self.assertTrue(torch.allclose(sm[0], t([1 / 6, 1 / 6, 0])))  # B = 3 counts the masked row
        self.assertTrue(torch.allclose(sm[2], t([1 / 9] * 3)))
        self.assertTrue(torch.allclose(aggregation_weights(mask, "seq-mean-token-sum"), mask / 3))
        self.assertTrue(torch.allclose(aggregation_weights(mask, "seq-mean-token-sum-norm", 8), mask / 24))
        with self.assertRaises(ValueError):
            aggregation_weights(mask, "seq-mean-token-sum-norm", 0)
        self.assertEqual(float(aggregation_weights(torch.zeros(2, 2, dtype=F64), "token-mean").sum()), 0.0)

    def test_masks_in_aggregate_loss(self):
        got = aggregate_loss([[1.0, 2.0], [4.0]], "seq-mean-token-mean", masks=[[1, 0], [1]])
        self.assertAlmostEqual(got, (1.0 + 4.0) / 2, delta=1e-12)


class ObjectiveGradients(unittest.TestCase):
    """Finite differences of the full per-token objective through log-softmax, in float64."""

    def setUp(self):
        g = torch.Generator().manual_seed(7)
        self.logits = torch.randn(2, 3, 5, generator=g, dtype=F64)
        self.targets = torch.tensor([[1, 4, 0], [2, 2, 3]])
        lp0, _ = logprobs_from_logits(self.logits, self.targets, False)
        # Log-ratios away from the clip kinks (log 0.8, log 1.28) so finite differences are smooth; one
        # is clamped (25 > 20) on a clipped token, where the policy-gradient term is constant.
        self.old = (lp0 - t([[0.5, -0.6, 25.0], [-0.1, 0.9, -0.3]])).detach()
        self.ref = (lp0 + 0.3).detach()
        self.adv = t([[1.0], [-1.5]])
        mask = t([[1, 1, 1], [1, 0, 1]])
        self.weights = aggregation_weights(mask, "seq-mean-token-mean")
        self.isw = t([[1.0, 0.5, 1.0], [2.0, 1.0, 1.0]])

    def objective(self, loss_type, dual=0.0):
        cfg = ObjectiveConfig(loss_type, "seq-mean-token-mean", 0.2, 0.28, dual, 0.1, 3, "two-sided")

        def f(logits):
            lp, _ = logprobs_from_logits(logits, self.targets, False)
            return token_objective(lp, self.old, self.adv, self.weights, cfg, ref=self.ref, is_weights=self.isw)[0]

        return f

    def test_ppo_gradcheck(self):
        for dual in (0.0, 3.0):
            x = self.logits.clone().requires_grad_(True)
            self.assertTrue(torch.autograd.gradcheck(self.objective("dapo", dual), (x,), eps=1e-6, atol=1e-7))

    def test_cispo_gradient_is_minus_w_a(self):
        lp = t([[-1.0, -2.0]], grad=True)
        old = t([[-1.0 - math.log(1.5), -2.0 - math.log(0.9)]])  # ratios 1.5 (clipped to 1.28) and 0.9
        terms = cispo_token_loss(lp, old, t([[2.0]]), 0.2, 0.28)
        terms.loss.sum().backward()
        self.assertAlmostEqual(float(lp.grad[0, 0]), -1.28 * 2.0, delta=1e-12)
        self.assertAlmostEqual(float(lp.grad[0, 1]), -0.9 * 2.0, delta=1e-12)
        self.assertEqual(terms.clipped_high.tolist(), [[True, False]])

    def test_cispo_finite_differences_where_the_weight_is_clipped(self):
        # Where ŵ is clipped it is constant, so the stop-gradient loss is smooth and FD applies.
        old = t([[-1.0 - math.log(1.5), -2.0 - math.log(0.5)]])
        f = lambda lp: cispo_token_loss(lp, old, t([[0.7]]), 0.2, 0.28).loss.sum()  # noqa: E731
        self.assertTrue(torch.autograd.gradcheck(f, (t([[-1.0, -2.0]], True),)))


if __name__ == "__main__":
    unittest.main()
