"""The OpenRLHF adapter: the remote-RM request/response as OpenRLHF sends and reads them, `reward_func`
called as OpenRLHF calls a `--reward.remote_url` Python file (`reward_func(queries, prompts, labels)`), and
the mesh's HTTP endpoint (`reward-mesh gateway`) answering a request in OpenRLHF's shape."""

import json
import unittest

try:
    import torch
except ImportError:  # reward_func then returns lists
    torch = None

from tests.mesh import GATEWAY, SERVICES

import reward_mesh as rm
from reward_mesh import openrlhf, verl

def values(x):
    """A tensor's (reward_func with torch) or a list's (without) values."""
    return x.tolist() if hasattr(x, "tolist") else list(x)


RUN = {"components": [{"service": "math", "component": "correct", "weight": 1},
                      {"service": "length", "component": "length", "weight": 0.01}]}


class ShapesTest(unittest.TestCase):
    def test_request_round_trip_and_validation(self):
        body = {"query": ["Q: 1+1? A: \\boxed{2}"], "prompts": ["Q: 1+1? A: "], "labels": ["2"]}
        self.assertEqual(openrlhf.RemoteRMRequest.from_json(json.loads(json.dumps(body))).to_json(), body)
        with self.assertRaisesRegex(rm.InvalidInputError, "'prompts' has 2 entries, 'query' 1"):
            openrlhf.RemoteRMRequest(["a"], ["p", "q"]).to_json()
        with self.assertRaisesRegex(rm.InvalidInputError, "with 'query'"):
            openrlhf.RemoteRMRequest.from_json({"queries": []})

    def test_response_and_label_rules(self):
        r = openrlhf.RemoteRMResponse.from_json({"rewards": [1.0], "extra_logs": {"math/correct": [1.0]}})
        self.assertEqual(r.to_json(), {"rewards": [1.0], "scores": [1.0], "extra_logs": {"math/correct": [1.0]}})
        with self.assertRaisesRegex(rm.MeshError, "no 'rewards' list"):
            openrlhf.RemoteRMResponse.from_json({"score": 1})
        self.assertEqual(openrlhf.response_text("Q: x A: y", "Q: x A: "), "y")
        self.assertEqual(openrlhf.task_of_label("3").math.answers, ["3"])
        self.assertEqual(openrlhf.task_of_label('{"custom": {}}').WhichOneof("kind"), "custom")


class RewardFuncTest(unittest.TestCase):
    def setUp(self):
        verl.reset()
        verl.configure(services=SERVICES, run_config=RUN, timeout=30)

    def tearDown(self):
        verl.reset()

    def test_reward_func_as_openrlhf_calls_it(self):
        prompts = ["<user>2+2?</user>", "<user>chat</user>"]
        queries = [prompts[0] + "\\boxed{4}", prompts[1] + "hello there"]
        labels = ["4", json.dumps({"custom": {}})]
        out = openrlhf.reward_func(queries, prompts, labels)
        self.assertEqual(set(out), {"rewards", "scores", "extra_logs"})
        if torch is not None:
            self.assertIsInstance(out["rewards"], torch.Tensor)
        self.assertEqual(values(out["rewards"])[0], 1.0)
        self.assertAlmostEqual(values(out["rewards"])[1], 0.11, places=6)  # float32, as OpenRLHF's tensors
        # The gateway's extra_logs: every component, 0.0 where it does not apply, and its "/applicable" key
        # (1.0 / 0.0) beside it, in the gateway's order; scores is the first component (math/correct).
        self.assertEqual(list(out["extra_logs"]), ["math/correct", "math/correct/applicable",
                                                   "length/length", "length/length/applicable"])
        self.assertEqual(values(out["extra_logs"]["math/correct"]), [1.0, 0.0])
        self.assertEqual(values(out["extra_logs"]["math/correct/applicable"]), [1.0, 0.0])
        self.assertEqual(values(out["extra_logs"]["length/length"]), [0.0, 11.0])
        self.assertEqual(values(out["extra_logs"]["length/length/applicable"]), [0.0, 1.0])
        self.assertEqual(values(out["scores"]), [1.0, 0.0])
        if torch is not None:  # float tensors, as OpenRLHF makes of the gateway's answer
            for k, v in [("rewards", out["rewards"]), ("scores", out["scores"]), *out["extra_logs"].items()]:
                self.assertEqual(v.dtype, torch.float32, k)
        else:  # floats, which json writes with a decimal point, as the gateway does
            for k, v in out["extra_logs"].items():
                self.assertTrue(all(type(x) is float for x in v), k)

    def test_score_component_as_the_gateways(self):
        prompts = ["<user>2+2?</user>", "<user>chat</user>"]
        queries = [prompts[0] + "\\boxed{4}", prompts[1] + "hello there"]
        labels = ["4", {"custom": {}}]
        total = openrlhf.reward_func(queries, prompts, labels, score_component="total")
        self.assertEqual(values(total["scores"]), values(total["rewards"]))
        length = openrlhf.reward_func(queries, prompts, labels, score_component="length/length")
        self.assertEqual(values(length["scores"]), [0.0, 11.0])
        with self.assertRaisesRegex(rm.InvalidInputError, "score component 'math/format' is not one of the "
                                    "components \\(math/correct, length/length\\) or 'total'"):
            openrlhf.reward_func(queries, prompts, labels, score_component="math/format")
        with self.assertRaisesRegex(rm.InvalidInputError, "'labels' has 1 entries, 'queries' 2"):
            openrlhf.reward_func(queries, prompts, ["4"])

    def test_real_openrlhf_queries(self):
        # What OpenRLHF really sends: left pad tokens before the prompt, the EOS/pad tokens after the
        # response, a prompt that decode(encode(p)) changed, a truncated prompt, a BOS before the prompt.
        p = "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"
        cases = [
            ("<|endoftext|><|endoftext|>" + p + "\\boxed{4}<|endoftext|>", "<|endoftext|>" + p, "\\boxed{4}"),
            (p + "\\boxed{4}</s><pad><pad>", p, "\\boxed{4}"),
            ("<s>" + p + "\\boxed{4}", p, "\\boxed{4}"),  # a BOS the prompt lacks: cut after the prompt
            ("user 2+2? \\boxed{4}", "user  2+2? ", "user 2+2? \\boxed{4}"),  # not found: the whole query
            ("\\boxed{4} again", "", "\\boxed{4} again"),
        ]
        for query, prompt, response in cases:
            self.assertEqual(openrlhf.response_text(query, prompt), response, query)
        out = openrlhf.reward_func([c[0] for c in cases], [c[1] for c in cases], ["4"] * len(cases))
        self.assertEqual(values(out["extra_logs"]["math/correct"]), [1.0] * len(cases))


class GatewayTest(unittest.TestCase):
    """`reward-mesh gateway --components math/correct=1,length/length=0.01` (started by the harness)."""

    def setUp(self):
        if not GATEWAY:
            raise RuntimeError("REWARD_MESH_TEST_GATEWAY is not set: run through test/python-client.test.ts")

    def test_gateway_answers_openrlhfs_request_as_reward_func_does(self):
        prompts = ["Q: 3+4? A: ", "Q: 3+4? A: ", "chat: "]
        req = openrlhf.RemoteRMRequest([prompts[0] + "\\boxed{7}", prompts[1] + "\\boxed{8}", prompts[2] + "hi there"],
                                       prompts, ["7", "7", {"custom": {}}])
        res = openrlhf.post(GATEWAY, req, timeout=30)
        # A component that does not apply is 0 in extra_logs (as in reward_func), with "<key>/applicable" 0
        # beside it; scores is the first component (math/correct), 0 where it does not apply.
        self.assertEqual(res.extra_logs["math/correct"], [1.0, 0.0, 0.0])
        self.assertEqual(res.extra_logs["math/correct/applicable"], [1.0, 1.0, 0.0])
        self.assertEqual(res.extra_logs["length/length"], [0.0, 0.0, 8.0])
        self.assertEqual(res.extra_logs["length/length/applicable"], [0.0, 0.0, 1.0])
        self.assertEqual(res.scores, [1.0, 0.0, 0.0])
        verl.reset()
        verl.configure(services=SERVICES, run_config=RUN)
        local = openrlhf.reward_func(req.query, req.prompts, req.labels)
        verl.reset()

        def as_openrlhf(v):  # OpenRLHF makes float32 tensors of the gateway's lists
            return torch.tensor(v).tolist() if torch is not None else v

        # The two ways of using OpenRLHF agree: the same rewards, scores and extra_logs (keys, order, values).
        self.assertEqual(values(local["rewards"]), as_openrlhf(res.rewards))
        self.assertEqual(values(local["scores"]), as_openrlhf(res.scores))
        self.assertEqual(list(local["extra_logs"]), list(res.extra_logs))
        for k, v in res.extra_logs.items():
            self.assertEqual(values(local["extra_logs"][k]), as_openrlhf(v), k)

    def test_gateway_refusal_names_the_key(self):
        with self.assertRaisesRegex(rm.MeshError, "HTTP 400: 'labels\\[1\\]' is an object but not a rewardmesh.v1.Task"):
            openrlhf.post(GATEWAY, {"query": ["x", "y"], "prompts": ["", ""], "labels": ["1", {"maths": {}}]}, timeout=30)
        # A query not starting with its prompt is scored whole (as OpenRLHF's math_reward_func.py), not refused.
        with self.assertRaisesRegex(rm.MeshError, "HTTP 400: 'labels\\[0\\]' must be a string, a number or a Task"):
            openrlhf.post(GATEWAY, {"query": ["x"], "prompts": ["y"], "labels": [["1"]]}, timeout=30)
        res = openrlhf.post(GATEWAY, {"query": ["x \\boxed{1}"], "prompts": ["y"], "labels": ["1"]}, timeout=30)
        self.assertEqual(res.extra_logs["math/correct"], [1.0])


if __name__ == "__main__":
    unittest.main()
