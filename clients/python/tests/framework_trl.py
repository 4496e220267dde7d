"""TRL itself (`trl.GRPOTrainer`, CPU) trained for a few steps on a tiny local model (built by
scripts/make-tiny-hf-model.py: a random Qwen2 with a BPE tokenizer and a chat template, no model hub)
with the mesh's components as its reward functions (reward_mesh.trl), against the running mesh; then
`MeshGRPOTrainer`, whose advantages are the mesh trainer's CorrGRPO answer.

Not discovered by `unittest discover` (not test_*.py): test/python-client.test.ts runs it on its own with
an interpreter that has TRL (the project's .venv), `python -m unittest tests.framework_trl`."""

import importlib.util
import math
import os
import tempfile
import unittest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

try:
    import torch
    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
except ImportError as e:  # the harness skips this file when TRL is missing; run by hand, say why
    raise unittest.SkipTest(f"TRL, torch, datasets or transformers is not installed: {e}") from None

from tests.mesh import SERVICES, TRAINER

import reward_mesh as rm
from reward_mesh import trl as rm_trl

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
RUN = {
    "components": [
        {"service": "math", "component": "correct", "weight": 1.0},
        {"service": "length", "component": "length", "weight": 0.01},
        {"service": "length", "component": "overlong", "weight": 0.5},
    ],
    "estimator": "corr_grpo",
    "services": {"length": ["math"]},  # length scores the math rollouts too
}
NAMES = ["math/correct", "length/length", "length/overlong"]
_tmp = None
MODEL = None


def setUpModule():
    """The tiny model, built once with the repository's builder (in this process: no second start-up)."""
    global _tmp, MODEL
    _tmp = tempfile.TemporaryDirectory(prefix="rm-trl-")
    spec = importlib.util.spec_from_file_location("make_tiny_hf_model", os.path.join(ROOT, "scripts", "make-tiny-hf-model.py"))
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    MODEL = os.path.join(_tmp.name, "tiny-qwen2")
    builder.main(["--arch", "qwen2", "--out", MODEL, "--hidden", "64", "--layers", "2", "--vocab", "1024",
                  "--max-positions", "512"])
    torch.set_num_threads(2)


def tearDownModule():
    if _tmp is not None:
        _tmp.cleanup()


def dataset():
    """Two math prompts (conversational, as chat models are trained), the reference answer as a column."""
    pairs = [(2, 3), (4, 5)]
    return Dataset.from_dict({
        "prompt": [[{"role": "user", "content": f"What is {a} plus {b}? Answer in \\boxed{{}}."}] for a, b in pairs],
        "solution": [str(a + b) for a, b in pairs],
    })


def config(out, steps=2):
    # 8 completions a step: 2 prompts x 4 generations; at most 16 new tokens each; no bf16, no reporting.
    # The random model's logits are all near 0: a bias of 4 on EOS (<|im_end|>) ends about 1 token in 20
    # there, so the completions' lengths differ and length/length varies within a group.
    eos = AutoTokenizer.from_pretrained(MODEL).eos_token_id
    return trl.GRPOConfig(generation_kwargs={"sequence_bias": {(eos,): 4.0}},output_dir=out, use_cpu=True, bf16=False, per_device_train_batch_size=8,
                          num_generations=4, max_completion_length=16, max_steps=steps, logging_steps=1,
                          report_to=[], save_strategy="no", disable_tqdm=True, seed=0, learning_rate=1e-4, dataloader_num_workers=0,
                          reward_weights=[c["weight"] for c in RUN["components"]])


def funcs():
    builder = lambda prompt, row: rm.math_task([row["solution"]], prompt=prompt)  # noqa: E731
    return rm_trl.reward_funcs_from_run_config(RUN, services=SERVICES, task_builder=builder, timeout=60)


class GRPOTrainerTest(unittest.TestCase):
    def test_grpo_trainer_logs_each_component(self):
        reward_funcs, weights = funcs()
        self.assertEqual([f.__name__ for f in reward_funcs], NAMES)
        with tempfile.TemporaryDirectory() as out:
            trainer = trl.GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(MODEL), reward_funcs=reward_funcs,
                                      args=config(out), train_dataset=dataset(),
                                      processing_class=AutoTokenizer.from_pretrained(MODEL))
            trainer.train()
        steps = [h for h in trainer.state.log_history if "rewards/length/length/mean" in h]
        self.assertEqual(len(steps), 2, trainer.state.log_history)
        for h in steps:  # TRL's per-reward-function metrics, one per mesh component
            print("TRL log:", {k: round(v, 4) for k, v in h.items() if k.startswith("rewards/") or k == "reward"})
            for name in NAMES:
                self.assertTrue(math.isfinite(h[f"rewards/{name}/mean"]), (name, h))
                self.assertIn(f"rewards/{name}/std", h)
            self.assertGreater(h["rewards/length/length/mean"], 0.0)
        self.assertEqual(reward_funcs[0].scorer.batches_scored, 2)  # one scoring per step for 3 functions
        # The values TRL logged for the last batch are the ones the mesh answered (length/length: the
        # completion's tokens, which differ).
        scored = reward_funcs[0].scorer._rows
        for name in NAMES:
            mesh_values = [math.nan if row[name] is None else row[name].value for row in scored]
            self.assertEqual(str(list(trainer._logs["rewards"][name])), str(mesh_values), name)
        lengths = list(trainer._logs["rewards"]["length/length"])
        self.assertGreater(len(set(lengths)), 1, lengths)
        reward_funcs[0].scorer.mesh.close()

    def test_mesh_grpo_trainer_uses_corrgrpo_advantages(self):
        reward_funcs, weights = funcs()
        seen = []

        class Probe(rm_trl.MeshGRPOTrainer):
            def _compute_loss(self, model, inputs):  # the advantages the policy loss is computed with
                seen.append(inputs["advantages"].detach().clone())
                return super()._compute_loss(model, inputs)

        with tempfile.TemporaryDirectory() as out, rm.AdvantagesClient(TRAINER) as client:
            trainer = Probe(model=AutoModelForCausalLM.from_pretrained(MODEL), reward_funcs=reward_funcs,
                            args=config(out), train_dataset=dataset(),
                            processing_class=AutoTokenizer.from_pretrained(MODEL),
                            advantages_client=client, run_config=RUN)
            trainer.train()
            req = trainer.mesh_last_request
            direct = client.compute(req)  # the same request, straight to the trainer
        self.assertEqual(req.estimator, "corr_grpo")
        self.assertEqual(list(req.components), NAMES)
        self.assertEqual(list(req.weights), [1.0, 0.01, 0.5])
        self.assertEqual([len(g.rollouts) for g in req.groups], [4, 4])
        expected = [a for g in direct.groups for a in (list(g.advantages) if g.kept else [0.0] * 4)]
        self.assertTrue(any(abs(a) > 1e-6 for a in expected), expected)
        self.assertEqual(len(seen), 2)
        # TRL shuffles the generation batch before the loss: the same advantages, in another order.
        self.assertEqual(sorted(round(a, 5) for a in seen[-1].tolist()), sorted(round(a, 5) for a in expected))
        self.assertEqual([round(a, 5) for a in trainer._logs["advantages"]], [round(a, 5) for a in expected])
        logs = [h for h in trainer.state.log_history if "mesh/advantages/mean" in h]
        self.assertEqual(len(logs), 2, trainer.state.log_history)
        for h in logs:
            print("TRL log:", {k: round(v, 4) for k, v in h.items() if k.startswith(("mesh/", "rewards/"))})
            self.assertIn("rewards/length/overlong/mean", h)
            self.assertIn("mesh/groups_kept", h)
        reward_funcs[0].scorer.mesh.close()

    def test_mesh_grpo_trainer_refusals(self):
        class NotGRPO:  # a TRL whose GRPOTrainer no longer has the private methods overridden
            pass

        with self.assertRaisesRegex(rm.MeshError, "has no _calculate_rewards, _generate_and_score_completions: "
                                    "the subclass overrides these private methods of TRL 1.16"):
            rm_trl.mesh_grpo_trainer_class(NotGRPO)
        reward_funcs, _ = funcs()
        with tempfile.TemporaryDirectory() as out, rm.AdvantagesClient(TRAINER) as client:
            args = config(out)
            args.reward_weights = [1.0, 1.0, 1.0]
            with self.assertRaisesRegex(rm.InvalidInputError, "are not the reward functions .* with reward_weights "
                                        "\\[1.0, 1.0, 1.0\\]"):
                rm_trl.MeshGRPOTrainer(model=AutoModelForCausalLM.from_pretrained(MODEL), reward_funcs=reward_funcs,
                                       args=args, train_dataset=dataset(),
                                       processing_class=AutoTokenizer.from_pretrained(MODEL),
                                       advantages_client=client, run_config=RUN)
        reward_funcs[0].scorer.mesh.close()


if __name__ == "__main__":
    unittest.main()
