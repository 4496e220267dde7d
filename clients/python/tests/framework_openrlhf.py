"""OpenRLHF's own remote-reward client (OpenRLHF 0.11.2, `openrlhf.utils.agent.SingleTurnAgentExecutor`, what
`--reward.remote_url` makes) against the real `reward-mesh gateway` and a `reward_func` file: its
`execute` tokenizes the prompt, takes a scripted generation (a stand-in for the vLLM engine, which needs a
GPU), decodes prompt + response with special tokens kept, as in a run, and fetches the reward.

Not discovered by `unittest discover` (not test_*.py): test/python-client.test.ts runs it on its own with
an interpreter that has OpenRLHF (`pip install --no-deps openrlhf==0.11.2` plus aiohttp, pylatexenc, sympy),
`python -m unittest tests.framework_openrlhf`."""

import asyncio
import importlib.util
import os
import tempfile
import types
import unittest

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

try:
    import torch
    from openrlhf.utils.agent import SingleTurnAgentExecutor
except ImportError as e:  # the harness skips this file when OpenRLHF is missing; run by hand, say why
    raise unittest.SkipTest(f"OpenRLHF's remote-reward client does not import: {e}") from None

from tests.mesh import GATEWAY, SERVICES

from reward_mesh import verl
from reward_mesh.openrlhf import post

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
# The gateway's components (test/python-client.test.ts starts it with these).
RUN = {"components": [{"service": "math", "component": "correct", "weight": 1},
                      {"service": "length", "component": "length", "weight": 0.01}]}
TOKENIZER = None


def setUpModule():
    global TOKENIZER
    spec = importlib.util.spec_from_file_location("make_tiny_hf_model", os.path.join(ROOT, "scripts", "make-tiny-hf-model.py"))
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    TOKENIZER = builder.train_tokenizer("qwen2", 1024, builder.corpus_files(builder.DEFAULT_CORPUS))


class ScriptedEngine:
    """Stands in for OpenRLHF's vLLM engine: answers `generate` with the given text's tokens, then EOS."""

    def __init__(self, text):
        self.ids = TOKENIZER(text, add_special_tokens=False)["input_ids"] + [TOKENIZER.eos_token_id]

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        out = types.SimpleNamespace(token_ids=self.ids, finish_reason="stop", logprobs=None)
        return types.SimpleNamespace(outputs=[out])


def run(executor, prompt, label, response):
    params = types.SimpleNamespace(max_tokens=64, logprobs=None)
    return asyncio.run(executor.execute(prompt, label, params, 512, TOKENIZER, ScriptedEngine(response)))


def chat(question):
    return TOKENIZER.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True, tokenize=False)


class OpenRLHFTest(unittest.TestCase):
    def setUp(self):
        if not GATEWAY:
            raise RuntimeError("REWARD_MESH_TEST_GATEWAY is not set: run through test/python-client.test.ts")
        verl.reset()

    def tearDown(self):
        verl.reset()

    def test_single_turn_executor_against_the_gateway(self):
        executor = SingleTurnAgentExecutor(GATEWAY)
        prompt = chat("What is 6 times 7?")
        right = run(executor, prompt, "42", "So it is \\boxed{42}.")
        wrong = run(executor, prompt, "42", "\\boxed{48}")
        print("OpenRLHF execute() via the gateway:", {k: right[k] for k in ("reward", "scores", "extra_logs")})
        # What OpenRLHF keeps of the gateway's answer for its one query.
        self.assertEqual(right["reward"], [1.0])
        self.assertEqual(wrong["reward"], [0.0])
        self.assertEqual(right["scores"], [1.0])
        self.assertEqual(right["extra_logs"], {"math/correct": [1.0], "math/correct/applicable": [1.0],
                                               "length/length": [0.0], "length/length/applicable": [0.0]})
        # The query OpenRLHF sent was the decoded prompt + response with its special tokens; the gateway cut
        # the response out of it. The batch form OpenRLHF shards over several endpoints:
        queries = [prompt + "\\boxed{42}<|im_end|>", "<|endoftext|>" + prompt + "no idea<|im_end|>"]
        (batch,) = asyncio.run(executor._fetch_rewards_via_http(queries, [prompt, prompt], ["42", {"custom": {}}]))
        self.assertEqual(batch["rewards"][0], 1.0)
        self.assertEqual(batch["extra_logs"]["length/length/applicable"], [0.0, 1.0])
        self.assertEqual(batch, post(GATEWAY, {"query": queries, "prompts": [prompt, prompt],
                                                "labels": ["42", {"custom": {}}]}).to_json())

    def test_single_turn_executor_with_a_reward_func_file(self):
        verl.configure(services=SERVICES, run_config=RUN)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mesh_reward.py")
            with open(path, "w") as f:
                f.write("from reward_mesh.openrlhf import reward_func  # noqa: F401\n")
            executor = SingleTurnAgentExecutor(path)  # OpenRLHF loads the file itself
            prompt = chat("What is 6 times 7?")
            out = run(executor, prompt, "42", "\\boxed{42}")
        self.assertIsInstance(out["reward"], torch.Tensor)
        self.assertEqual(out["reward"].tolist(), [1.0])
        self.assertEqual({k: v.tolist() for k, v in out["extra_logs"].items()},
                         {"math/correct": [1.0], "math/correct/applicable": [1.0],
                          "length/length": [0.0], "length/length/applicable": [0.0]})
        # The same as the gateway's answer for the same query.
        gateway = run(SingleTurnAgentExecutor(GATEWAY), prompt, "42", "\\boxed{42}")
        self.assertEqual(out["reward"].tolist(), gateway["reward"])
        self.assertEqual(out["scores"].tolist(), gateway["scores"])


if __name__ == "__main__":
    unittest.main()
