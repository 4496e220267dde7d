"""verl's own code (verl 0.9.1, CPU, in this process) with reward_mesh.verl against the running mesh:
verl's reward managers (`verl.workers.reward_manager` NaiveRewardManager and BatchRewardManager, and the
reward loop's naive manager that verl 0.9.1's trainers run in their RewardLoopWorker actors) call
`compute_score` / `compute_score_batch` on a real `DataProto` decoded with a real tokenizer; the
component values land in `reward_extra_info`, which verl's trainer puts in the batch's non-tensor part;
then verl's `compute_advantage` looks the registered `corr_grpo` / `s_grpo` up through
`get_adv_estimator_fn`, and the advantages are the mesh trainer's for the batch's components.

Not discovered by `unittest discover` (not test_*.py): test/python-client.test.ts runs it on its own with
an interpreter that has verl (the project's .venv), `python -m unittest tests.framework_verl`."""

import asyncio
import importlib.util
import os
import unittest
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

try:
    import numpy as np
    import torch
    from verl import DataProto
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls as get_reward_loop_manager_cls
    from omegaconf import OmegaConf
    from verl.trainer.ppo import core_algos, ray_trainer
    from verl.trainer.ppo.ray_trainer import compute_advantage
    from verl.trainer.ppo.reward import extract_reward
    from verl.workers.reward_manager import BatchRewardManager, NaiveRewardManager, get_reward_manager_cls
except ImportError as e:  # the harness skips this file when verl is missing; run by hand, say why
    raise unittest.SkipTest(f"verl (with cachetools, fastapi, uvicorn) or torch is not installed: {e}") from None

from tests.mesh import SERVICES, TRAINER

import reward_mesh as rm
from reward_mesh import verl as rm_verl  # importing it registers the estimators in verl's registry

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
RUN = {
    "components": [
        {"service": "math", "component": "correct", "weight": 1.0},
        {"service": "math", "component": "format", "weight": 0.25},
        {"service": "length", "component": "length", "weight": 0.01},
    ],
    "estimator": "corr_grpo",
    "services": {"length": ["math"]},  # length scores the math rollouts too
}
NAMES = ["math/correct", "math/format", "length/length"]
TOKENIZER = None

# Two prompts (uids u0, u1) of three responses each, as verl's rollout lays a batch out.
PROMPTS = ["What is 2 plus 2?", "What is 3 plus 4?"]
ANSWERS = ["4", "7"]
RESPONSES = [
    ["The answer is \\boxed{4}.", "\\boxed{5}", "It is 4, I think, because two and two make four."],
    ["\\boxed{7}", "\\boxed{7} since 3 + 4 = 7, which I checked twice.", "seven"],
]


def setUpModule():
    """A real BPE tokenizer (the repository's tiny-model builder's, without the model)."""
    global TOKENIZER
    spec = importlib.util.spec_from_file_location("make_tiny_hf_model", os.path.join(ROOT, "scripts", "make-tiny-hf-model.py"))
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    TOKENIZER = builder.train_tokenizer("qwen2", 1024, builder.corpus_files(builder.DEFAULT_CORPUS))


def batch(width=24):
    """The DataProto verl's reward manager gets: left-padded prompts, right-padded responses, the mask over
    both; data_source, reward_model.ground_truth, extra_info and uid in the non-tensor part."""
    tok = TOKENIZER
    rows, sources, truths, infos, uids = [], [], [], [], []
    for p, (prompt, answer, responses) in enumerate(zip(PROMPTS, ANSWERS, RESPONSES)):
        ids = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=True)
        ids = list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
        for r in responses:
            rows.append((ids, tok(r, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]))
            sources.append("openai/gsm8k")
            truths.append({"ground_truth": answer})
            infos.append({"question": prompt, "split": "train"})
            uids.append(f"u{p}")
    plen = max(len(a) for a, _ in rows)
    pad = tok.pad_token_id
    prompts = torch.tensor([[pad] * (plen - len(a)) + a for a, _ in rows])
    responses = torch.tensor([(b + [pad] * width)[:width] for _, b in rows])
    mask = torch.tensor([[0] * (plen - len(a)) + [1] * len(a) + [1] * min(len(b), width) + [0] * (width - min(len(b), width))
                         for a, b in rows])
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": mask,
                 "input_ids": torch.cat([prompts, responses], dim=1), "response_mask": mask[:, plen:]},
        non_tensors={"data_source": np.array(sources, dtype=object), "reward_model": np.array(truths, dtype=object),
                     "extra_info": np.array(infos, dtype=object), "uid": np.array(uids, dtype=object)})


def as_verl_trainer_does(data, reward_tensor, reward_extra_info):
    """What verl's RayPPOTrainer.fit does with the reward manager's answer before compute_advantage:
    token_level_scores, the extra info into the non-tensor batch, no KL in the reward."""
    data.batch["token_level_scores"] = reward_tensor
    data.non_tensor_batch.update({k: np.array(v) for k, v in reward_extra_info.items()})
    data.batch["token_level_rewards"] = data.batch["token_level_scores"]
    return data


def direct(client, data, estimator, **kwargs):
    """The mesh trainer's advantages for the batch's components as they sit in the DataProto (NaN: not
    applicable), one group per uid, in batch order."""
    groups = {}
    for i, uid in enumerate(data.non_tensor_batch["uid"]):
        row = [float(data.non_tensor_batch[n][i]) for n in NAMES]
        groups.setdefault(uid, []).append([None if v != v else v for v in row])
    res = client.compute(list(groups.values()), estimator=estimator, components=NAMES,
                         weights=[c["weight"] for c in RUN["components"]], **kwargs)
    return [a for g in res.groups for a in g.advantages]


class VerlTest(unittest.TestCase):
    def setUp(self):
        rm_verl.reset()
        rm_verl.configure(services=SERVICES, run_config=RUN, trainer=TRAINER, timeout=60)

    def tearDown(self):
        rm_verl.reset()

    def assert_mesh_advantages(self, data, label):
        """`data`'s advantages are the mesh trainer's corr_grpo answer for its components, on every response
        token and 0 on padding, and its returns equal them."""
        adv = data.batch["advantages"]
        with rm.AdvantagesClient(TRAINER) as client:
            expected = direct(client, data, "corr_grpo")
        got = [float(adv[i, 0]) for i in range(len(data))]
        print(f"{label}:", [round(a, 4) for a in got])
        self.assertEqual([round(a, 5) for a in got], [round(a, 5) for a in expected])
        self.assertTrue(any(abs(a) > 1e-6 for a in got))
        mask = data.batch["response_mask"].bool()
        for i in range(len(data)):
            self.assertTrue(torch.all(adv[i][mask[i]] == adv[i, 0]) and torch.all(adv[i][~mask[i]] == 0))
        self.assertTrue(torch.equal(data.batch["returns"], adv))

    def test_estimators_are_in_verls_registry(self):
        for name in ("corr_grpo", "s_grpo", "reward_mesh"):
            self.assertIn(name, core_algos.ADV_ESTIMATOR_REGISTRY)
            self.assertIs(core_algos.get_adv_estimator_fn(name), rm_verl._registered[name])
        # verl's own GRPO is still verl's
        self.assertIsNot(core_algos.get_adv_estimator_fn("grpo"), rm_verl._registered["corr_grpo"])
        # A name verl already gives another function: verl's ValueError, or a warning with skip_taken.
        with self.assertRaisesRegex(ValueError, "grpo"):
            rm_verl.register(names={"grpo": "corr_grpo"})
        with warnings.catch_warnings(record=True) as caught:  # (assertWarns trips over transformers' lazy modules)
            warnings.simplefilter("always")
            self.assertEqual(rm_verl.register(names={"grpo": "corr_grpo"}, skip_taken=True), {})
        self.assertIn("not registering 'grpo'", " ".join(str(w.message) for w in caught))

    def test_naive_reward_manager_then_compute_advantage_corr_grpo(self):
        data = batch()
        self.assertIs(get_reward_manager_cls("naive"), NaiveRewardManager)
        manager = NaiveRewardManager(tokenizer=TOKENIZER, num_examine=0, compute_score=rm_verl.compute_score)
        out = manager(data, return_dict=True)
        reward, extra = out["reward_tensor"], out["reward_extra_info"]
        self.assertEqual(set(extra), {"score", *NAMES})
        print("verl reward_extra_info:", {k: [round(float(v), 4) for v in vs] for k, vs in extra.items()})
        self.assertEqual(extra["math/correct"], [1.0, 0.0, 0.0, 1.0, 1.0, 0.0])
        self.assertEqual(extra["math/format"], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0])
        # length/length: the decoded response's tokens or code points, never missing here
        self.assertTrue(all(v > 0 for v in extra["length/length"]), extra["length/length"])
        # The score on each response's last token, as verl places it.
        last = data.batch["attention_mask"][:, data.batch["prompts"].shape[1]:].sum(-1) - 1
        self.assertEqual([round(float(reward[i, j]), 5) for i, j in enumerate(last)], [round(s, 5) for s in extra["score"]])

        data = as_verl_trainer_does(data, reward, extra)
        data = compute_advantage(data, adv_estimator="corr_grpo", config=None)
        fn = rm_verl._registered["corr_grpo"]
        self.assertEqual(fn.last_request.estimator, "grpo_covariance_coefficient")
        self.assertEqual(list(fn.last_request.components), NAMES)
        self.assertEqual(data.batch["advantages"].shape, data.batch["response_mask"].shape)
        self.assert_mesh_advantages(data, "verl compute_advantage(corr_grpo)")

    def test_batch_reward_manager_then_compute_advantage_s_grpo(self):
        rm_verl.configure(run_config=dict(RUN, sgrpo={"p": 0.2, "component": "math/correct", "successThreshold": 0.5}))
        data = batch()
        manager = BatchRewardManager(tokenizer=TOKENIZER, num_examine=0, compute_score=rm_verl.compute_score_batch)
        out = manager(data, return_dict=True)
        self.assertEqual(out["reward_extra_info"]["math/correct"], [1.0, 0.0, 0.0, 1.0, 1.0, 0.0])
        data = as_verl_trainer_does(data, out["reward_tensor"], out["reward_extra_info"])
        data = compute_advantage(data, adv_estimator="s_grpo", config=None)
        fn = rm_verl._registered["s_grpo"]
        self.assertEqual(fn.last_response.estimator, "grpo")
        self.assertAlmostEqual(fn.last_request.sgrpo.p, 0.2)
        with rm.AdvantagesClient(TRAINER) as client:
            expected = direct(client, data, "grpo", sgrpo={"p": 0.2, "component": "math/correct", "successThreshold": 0.5})
        got = [float(data.batch["advantages"][i, 0]) for i in range(len(data))]
        self.assertEqual([round(a, 5) for a in got], [round(a, 5) for a in expected])

    def test_reward_loop_manager_scores_and_a_driver_that_scored_nothing_is_refused(self):
        # verl 0.9.1's trainers score with the reward loop's manager, in RewardLoopWorker Ray actors.
        data = batch()

        async def score_all():  # the manager takes the running event loop when it is built
            manager = get_reward_loop_manager_cls("naive")(config=None, tokenizer=TOKENIZER,
                                                           compute_score=rm_verl.compute_score)
            return [await manager.run_single(data[i:i + 1]) for i in range(len(data))]

        results = asyncio.run(score_all())
        self.assertEqual([r["reward_extra_info"]["math/correct"] for r in results], [1.0, 0.0, 0.0, 1.0, 1.0, 0.0])
        self.assertEqual([r["reward_score"] for r in results], [r["reward_extra_info"]["score"] for r in results])
        # In a verl 0.9.1 run those workers are other processes: the driver's estimator has no records.
        rm_verl.reset()
        rm_verl.configure(services=SERVICES, run_config=RUN, trainer=TRAINER, timeout=60)
        reward = torch.zeros_like(data.batch["responses"], dtype=torch.float32)
        data = as_verl_trainer_does(data, reward, {})
        with self.assertRaisesRegex(rm.MeshError, "this process scored 0 .*RewardLoopWorker"):
            compute_advantage(data, adv_estimator="corr_grpo", config=None)


    def reward_loop_batch(self, run_config=RUN):
        """The batch as verl 0.9.1's legacy fit loop holds it when it calls compute_advantage: the reward
        loop's naive manager scored each sample (in RewardLoopWorker actors: here, then this process's
        records are dropped); the agent loop put each reward_extra_info key into the non-tensor batch and
        the keys into meta_info, rm_scores on the last response token; the fit loop ran verl's
        extract_reward and put token_level_scores / token_level_rewards (no KL in the reward)."""
        rm_verl.reset()  # the reward workers: the mesh's services and the run configuration
        rm_verl.configure(services=SERVICES, run_config=RUN, trainer=TRAINER, timeout=60)
        data = batch()

        async def score_all():
            manager = get_reward_loop_manager_cls("naive")(config=None, tokenizer=TOKENIZER,
                                                           compute_score=rm_verl.compute_score)
            return [await manager.run_single(data[i:i + 1]) for i in range(len(data))]

        results = asyncio.run(score_all())
        # The driver: a process that scored nothing, with the run configuration and the trainer, no services.
        rm_verl.reset()
        rm_verl.configure(run_config=run_config, trainer=TRAINER, timeout=60)
        infos = [r["reward_extra_info"] for r in results]
        keys = list(infos[0])
        last = data.batch["attention_mask"][:, data.batch["prompts"].shape[1]:].sum(-1) - 1
        rm_scores = torch.zeros_like(data.batch["responses"], dtype=torch.float32)
        for i, r in enumerate(results):
            rm_scores[i, last[i]] = r["reward_score"]
        data.batch["rm_scores"] = rm_scores
        for k in keys:  # verl/experimental/agent_loop/agent_loop.py, _postprocess
            data.non_tensor_batch[k] = np.array([info[k] for info in infos])
        data.non_tensor_batch["reward_extra_info"] = np.array(infos, dtype=object)
        data.meta_info["reward_extra_keys"] = keys
        reward_tensor, extra = extract_reward(data)  # RayPPOTrainer.fit
        data.batch["token_level_scores"] = reward_tensor
        data.non_tensor_batch.update({k: np.array(v) for k, v in extra.items()})
        data.batch["token_level_rewards"] = data.batch["token_level_scores"]
        return data

    def fit_loop_compute_advantage(self, data, estimator, **algorithm):
        """The call RayPPOTrainer.fit makes, through the module attribute it resolves at call time."""
        config = OmegaConf.create({"adv_estimator": estimator, "use_kl_in_reward": False, "gamma": 1.0, "lam": 1.0,
                                   "norm_adv_by_std_in_grpo": True, **algorithm})
        return ray_trainer.compute_advantage(data, adv_estimator=config.adv_estimator, gamma=config.gamma,
                                             lam=config.lam, num_repeat=3,
                                             norm_adv_by_std_in_grpo=config.norm_adv_by_std_in_grpo, config=config)

    def test_installed_driver_reads_the_reward_loops_components(self):
        original = ray_trainer.compute_advantage
        try:
            self.assertEqual(rm_verl.install(), ["verl.trainer.ppo.ray_trainer.compute_advantage"]
                             + [m for m in rm_verl.driver.installed if "v1" in m])
            patched = ray_trainer.compute_advantage
            self.assertIsNot(patched, original)
            rm_verl.install()  # idempotent
            self.assertIs(ray_trainer.compute_advantage, patched)
            self.assertIs(patched.__reward_mesh_original__, original)

            data = self.reward_loop_batch()
            self.assertEqual(len(rm_verl._ledger), 0)
            data = self.fit_loop_compute_advantage(data, "corr_grpo")
            self.assertEqual(rm_verl.driver.last_request.estimator, "grpo_covariance_coefficient")
            self.assertEqual(list(rm_verl.driver.last_request.components), NAMES)
            self.assert_mesh_advantages(data, "installed compute_advantage(corr_grpo), components from reward_extra_info")

            # Any other estimator: verl's own.
            data = self.fit_loop_compute_advantage(self.reward_loop_batch(), "grpo")
            ref, _ = core_algos.compute_grpo_outcome_advantage(data.batch["token_level_rewards"], data.batch["response_mask"],
                                                               data.non_tensor_batch["uid"])
            self.assertTrue(torch.allclose(data.batch["advantages"], ref))
        finally:
            rm_verl.uninstall()
        self.assertIs(ray_trainer.compute_advantage, original)

    def test_installed_driver_refusals(self):
        try:
            rm_verl.install()
            # A component the reward functions did not return.
            extra = dict(RUN, components=RUN["components"] + [{"service": "length", "component": "overlong", "weight": 0.5}])
            data = self.reward_loop_batch(run_config=extra)
            with self.assertRaisesRegex(rm.InvalidInputError, "component 'length/overlong' .* not in the batch's reward_extra_info"):
                self.fit_loop_compute_advantage(data, "corr_grpo")
            # Other weights in the driver than in the workers.
            data = self.reward_loop_batch()
            rm_verl.configure(run_config=dict(RUN, components=[dict(c, weight=2.0) for c in RUN["components"]]))
            with self.assertRaisesRegex(rm.MeshError, "sample 0's reward is .* same run configuration"):
                self.fit_loop_compute_advantage(data, "corr_grpo")
            rm_verl.configure(run_config=RUN)
            with self.assertRaisesRegex(rm.InvalidInputError, "use_kl_in_reward=True"):
                self.fit_loop_compute_advantage(data, "corr_grpo", use_kl_in_reward=True)
            with self.assertRaisesRegex(rm.InvalidInputError, "s_grpo: S-GRPO needs"):
                self.fit_loop_compute_advantage(data, "s_grpo")
            del data.non_tensor_batch["uid"]
            with self.assertRaisesRegex(rm.InvalidInputError, "no non_tensor_batch\\['uid'\\]"):
                self.fit_loop_compute_advantage(data, "corr_grpo")
            # A verl whose compute_advantage has another signature.
            rm_verl.uninstall()
            saved = ray_trainer.compute_advantage
            ray_trainer.compute_advantage = lambda data, adv_estimator, config=None: data
            try:
                with self.assertRaisesRegex(rm.MeshError, "has parameters .* not supported"):
                    rm_verl.install()
            finally:
                ray_trainer.compute_advantage = saved
        finally:
            rm_verl.uninstall()

if __name__ == "__main__":
    unittest.main()
