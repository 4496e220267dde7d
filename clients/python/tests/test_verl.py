"""The verl adapter called as verl calls it: `compute_score(data_source=..., solution_str=...,
ground_truth=..., extra_info=...)` once per sample in batch order (NaiveRewardManager), or the batch form
(BatchRewardManager); then an estimator from verl's registry called as `compute_advantage` calls one
(`token_level_rewards`, `response_mask`, `config`, `index` = the uid array), the reward on each
response's last token as verl places it."""

import contextlib
import math
import os
import tempfile
import unittest
import warnings
from enum import Enum

try:  # the estimators need torch (verl's tensors); compute_score needs neither
    import numpy as np
    import torch
except ImportError:
    np = torch = None

from tests.mesh import SERVICES, TRAINER

import reward_mesh as rm
from reward_mesh import verl

RUN = {
    "components": [
        {"service": "math", "component": "correct", "weight": 1},
        {"service": "math", "component": "format", "weight": 0.25},
        {"service": "length", "component": "overlong", "weight": 0.5},
    ],
    "estimator": {"name": "corr_grpo", "options": {"epsilonPlacement": "outside"}},
}


def verl_registry():
    """verl's registry contract (verl/trainer/ppo/core_algos.py): `register_adv_est(name)` returns a
    decorator that stores the function under the name (an Enum's value) and refuses a different function
    for a taken name; `get_adv_estimator_fn(name)` looks it up."""
    registry = {}

    def register_adv_est(name_or_enum):
        def decorator(fn):
            name = name_or_enum.value if isinstance(name_or_enum, Enum) else name_or_enum
            if name in registry and registry[name] != fn:
                raise ValueError(f"Adv estimator {name} has already been registered")
            registry[name] = fn
            return fn
        return decorator

    def get_adv_estimator_fn(name):
        if name not in registry:
            raise ValueError(f"Unknown advantage estimator: {name}")
        return registry[name]

    return register_adv_est, get_adv_estimator_fn


@contextlib.contextmanager
def environment(values):
    """Sets environment variables for the block (the settings verl's processes would inherit)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def verl_batch(scores, lengths, width=6):
    """token_level_rewards and response_mask as verl builds them: the score on the last response token."""
    rewards = torch.zeros(len(scores), width, dtype=torch.float32)
    mask = torch.zeros(len(scores), width, dtype=torch.int64)
    for i, (s, n) in enumerate(zip(scores, lengths)):
        mask[i, :n] = 1
        rewards[i, n - 1] = s
    return rewards, mask


needs_torch = unittest.skipIf(torch is None, "torch and numpy are not installed: the verl estimators need them")


class VerlTest(unittest.TestCase):
    def setUp(self):
        verl.reset()
        verl.configure(services=SERVICES, run_config=RUN, trainer=TRAINER, timeout=30)

    def tearDown(self):
        verl.reset()

    def test_compute_score_dict(self):
        out = verl.compute_score(data_source="openai/gsm8k", solution_str="so \\boxed{12}", ground_truth="12",
                                 extra_info={"split": "train", "index": 0, "question": "6+6?"})
        self.assertEqual(set(out), {"score", "math/correct", "math/format", "length/overlong"})
        self.assertEqual(out["math/correct"], 1.0)
        self.assertTrue(math.isnan(out["length/overlong"]))  # length does not score math
        self.assertEqual(out["score"], 1.25)
        wrong = verl.compute_score("openai/gsm8k", "\\boxed{13}", "12")
        self.assertEqual(wrong["score"], 0.25)

    @needs_torch
    def test_task_from_extra_info_and_batch_form(self):
        custom = {"custom": {}, "prompt": "talk"}
        # As BatchRewardManager calls it: keywords, numpy object arrays from the non-tensor batch.
        out = verl.compute_score_batch(
            data_sources=np.array(["chat", "chat", "math"], dtype=object), solution_strs=["a" * 48, "b", "\\boxed{2}"],
            ground_truths=[None, None, np.array(["2", "two"], dtype=object)],
            extra_infos=np.array([{"task": custom}, {"task": custom}, None], dtype=object), token_ids=[[1], [2], [3]])
        self.assertEqual([o["length/overlong"] for o in out[:2]], [-0.5, 0.0])
        self.assertTrue(math.isnan(out[0]["math/correct"]))
        self.assertEqual(out[0]["score"], -0.25)
        self.assertEqual(out[2]["score"], 1.25)
        with self.assertRaisesRegex(rm.InvalidInputError, "ground_truth\\[1\\] is empty"):
            verl.compute_score_batch(["d", "d"], ["x", "y"], ["1", None], None)

    def _scored_batch(self):
        """Two groups of three, scored as NaiveRewardManager does (one compute_score per sample, in order)."""
        answers = ["\\boxed{4}", "\\boxed{5}", "The answer is \\boxed{4}" + "!" * 30, "4", "\\boxed{4}", "\\boxed{9}"]
        scores = [verl.compute_score("math", s, "4")["score"] for s in answers]
        return scores, np.array(["u1", "u1", "u1", "u2", "u2", "u2"], dtype=object)

    @needs_torch
    def test_registered_estimator_calls_compute_advantages(self):
        register_adv_est, get_adv_estimator_fn = verl_registry()
        fns = verl.register(register_adv_est)
        self.assertEqual(set(fns), {"corr_grpo", "s_grpo", "reward_mesh"})
        self.assertIs(verl.register(register_adv_est)["corr_grpo"], fns["corr_grpo"])  # idempotent
        # A fork that already has its own corr_grpo: verl refuses; skip it, or register under another name.
        register_other, get_other = verl_registry()
        register_other("corr_grpo")(lambda **kw: None)
        with self.assertRaisesRegex(ValueError, "already been registered"):
            verl.register(register_other)
        # (not assertWarns: it reads __warningregistry__ of every loaded module, and transformers' lazy
        # modules, loaded where TRL or verl is installed, answer that by importing torchvision)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.assertEqual(set(verl.register(register_other, skip_taken=True)), {"s_grpo", "reward_mesh"})
        self.assertTrue(
            any(issubclass(w.category, UserWarning) and "not registering 'corr_grpo'" in str(w.message) for w in caught),
            [str(w.message) for w in caught],
        )
        verl.register(register_other, {"mesh_corr_grpo": "corr_grpo"})
        self.assertIs(get_other("mesh_corr_grpo"), fns["corr_grpo"])
        scores, uid = self._scored_batch()
        # The run config puts length/overlong on math rollouts only through `services:`; here it is N/A.
        rewards, mask = verl_batch(scores, [3, 4, 6, 2, 5, 1])
        fn = get_adv_estimator_fn("corr_grpo")
        advantages, returns = fn(token_level_rewards=rewards, response_mask=mask, config=None, index=uid)
        self.assertEqual(advantages.shape, rewards.shape)
        self.assertTrue(torch.equal(advantages, returns))
        self.assertTrue(torch.all(advantages[mask == 0] == 0))
        # The same groups sent directly give the same numbers (float32, as verl's tensors).
        with rm.AdvantagesClient(TRAINER) as client:
            values = [[1.0, 1.0, None], [0.0, 1.0, None], [1.0, 1.0, None], [0.0, 0.0, None], [1.0, 1.0, None], [0.0, 1.0, None]]
            direct = client.compute([values[:3], values[3:]], estimator="grpo_covariance_coefficient",
                                    components=["math/correct", "math/format", "length/overlong"], weights=[1, 0.25, 0.5],
                                    options={"epsilonPlacement": "outside"})
        expected = torch.tensor([a for g in direct.groups for a in g.advantages], dtype=torch.float32)
        self.assertTrue(torch.equal(advantages[:, 0], expected), (advantages[:, 0], expected))
        self.assertEqual(fn.last_response.estimator, "grpo_covariance_coefficient")

    @needs_torch
    def test_s_grpo_needs_p_and_then_weights_groups(self):
        fn = verl.estimator_fn("s_grpo")
        scores, uid = self._scored_batch()
        rewards, mask = verl_batch(scores, [1] * 6)
        with self.assertRaisesRegex(rm.InvalidInputError, "S-GRPO needs 'sgrpo: \\{p: ...\\}'"):
            fn(token_level_rewards=rewards, response_mask=mask, index=uid, config=None)
        verl.configure(run_config=dict(RUN, sgrpo={"p": 0.2, "component": "math/correct", "successThreshold": 0.5}))
        scores, uid = self._scored_batch()
        advantages, _ = fn(token_level_rewards=rewards, response_mask=mask, index=uid, config=None)
        self.assertEqual(fn.last_response.estimator, "grpo")
        self.assertNotEqual(float(advantages.abs().sum()), 0.0)

    @needs_torch
    def test_mismatched_rewards_are_refused(self):
        fn = verl.estimator_fn("reward_mesh")
        scores, uid = self._scored_batch()
        rewards, mask = verl_batch([s + 0.1 for s in scores], [2] * 6)  # e.g. a KL penalty in the reward
        with self.assertRaisesRegex(rm.MeshError, "sample 0's reward is"):
            fn(token_level_rewards=rewards, response_mask=mask, index=uid, config=None)
        with self.assertRaisesRegex(rm.MeshError, "the batch has 6 samples but this process scored 0"):
            fn(token_level_rewards=rewards, response_mask=mask, index=uid, config=None)
        # What verl 0.9.1's trainers do (RewardLoopWorker Ray actors score, not the driver): said so.
        with self.assertRaisesRegex(rm.MeshError, "in another process.*verl 0.9.1's trainers .*RewardLoopWorker Ray actors"):
            fn(token_level_rewards=rewards, response_mask=mask, index=uid, config=None)

    @needs_torch
    def test_settings_from_the_environment_with_a_yaml_run_file(self):
        verl.reset()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "run.yaml")
            with open(path, "w") as f:
                f.write("components: overlong\nservices: {length: [math]}\nestimator: grpo\n")
            env = {"REWARD_MESH_SERVICES": ",".join(f"{k}={v}" for k, v in SERVICES.items()),
                   "REWARD_MESH_RUN_CONFIG": path, "REWARD_MESH_TRAINER": TRAINER}
            with environment(env):
                out = verl.compute_score("math", "x" * 40 + "\\boxed{1}", "1")
                self.assertEqual(set(out), {"score", "length/overlong"})  # the preset; length scores math here
                self.assertAlmostEqual(out["score"], -(49 - 32) / 32)
                verl.compute_score("math", "\\boxed{1}", "1")
                rewards, mask = verl_batch([out["score"], 0.0], [1, 1])
                adv, _ = verl.estimator_fn("reward_mesh")(token_level_rewards=rewards, response_mask=mask,
                                                         index=np.array(["u", "u"], dtype=object))
                self.assertEqual(verl.estimator_fn("reward_mesh").__name__, "compute_reward_mesh_outcome_advantage")
                self.assertLess(float(adv[0, 0]), 0.0)

    def test_settings_from_reward_kwargs_and_environment(self):
        verl.reset()
        with self.assertRaisesRegex(rm.InvalidInputError, "no services: set REWARD_MESH_SERVICES"):
            verl.compute_score("math", "\\boxed{1}", "1")
        services = ",".join(f"{k}={v}" for k, v in SERVICES.items())
        out = verl.compute_score("math", "\\boxed{1}", "1", services=services)  # custom_reward_function.reward_kwargs
        self.assertEqual(out["math/correct"], 1.0)
        self.assertIn("length/length", out)  # no run config: every component, weight 1

    @needs_torch
    def test_estimator_uses_the_settings_of_reward_kwargs(self):
        # verl passes custom_reward_function.reward_kwargs to compute_score only; the estimator gets none.
        verl.reset()
        run = {"components": [{"service": "math", "component": "correct", "weight": 1},
                              {"service": "math", "component": "format", "weight": 0.25}],
               "estimator": {"name": "corr_grpo", "options": {"epsilonPlacement": "outside"}},
               "dynamicSampling": {}}
        kwargs = {"services": SERVICES, "run_config": run, "trainer": TRAINER, "timeout": 30}
        answers = ["\\boxed{4}", "\\boxed{5}", "4", "\\boxed{4}", "\\boxed{4}", "\\boxed{4}"]
        scores = [verl.compute_score("math", a, "4", **kwargs)["score"] for a in answers]
        self.assertEqual(scores[:3], [1.25, 0.25, 0.0])
        rewards, mask = verl_batch(scores, [2] * 6)
        uid = np.array(["a", "a", "a", "b", "b", "b"], dtype=object)
        fn = verl.estimator_fn("reward_mesh")
        advantages, _ = fn(token_level_rewards=rewards, response_mask=mask, index=uid, config=None)
        req = fn.last_request
        self.assertEqual(list(req.weights), [1.0, 0.25])
        self.assertEqual(req.estimator, "corr_grpo")
        self.assertEqual(req.options.epsilon_placement, "outside")
        self.assertTrue(req.HasField("dynamic_sampling"))
        self.assertEqual([g.kept for g in fn.last_response.groups], [True, False])  # group b: all equal
        with rm.AdvantagesClient(TRAINER) as client:
            direct = client.compute([[[1.0, 1.0], [0.0, 1.0], [0.0, 0.0]]], estimator="corr_grpo",
                                    components=["math/correct", "math/format"], weights=[1, 0.25],
                                    options={"epsilonPlacement": "outside"})
        expected = torch.tensor(list(direct.groups[0].advantages), dtype=torch.float32)
        self.assertTrue(torch.equal(advantages[:3, 0], expected), (advantages[:3, 0], expected))
        self.assertTrue(torch.all(advantages[3:] == 0))
        self.assertEqual(advantages.device, rewards.device)


if __name__ == "__main__":
    unittest.main()
