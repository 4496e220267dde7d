"""The OpenRLHF adapter: the remote-RM request/response as OpenRLHF sends and reads them, `reward_func`
called as OpenRLHF calls a `--remote_rm_url` Python file (`reward_func(queries, prompts, labels)`), and
the mesh's HTTP endpoint (`reward-mesh gateway`) answering a request in OpenRLHF's shape."""

import json
import math
import unittest

import torch

from tests.mesh import GATEWAY, SERVICES

import reward_mesh as rm
from reward_mesh import openrlhf, verl

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
        self.assertIsInstance(out["rewards"], torch.Tensor)
        self.assertEqual(out["rewards"].tolist()[0], 1.0)
        self.assertAlmostEqual(out["rewards"].tolist()[1], 0.11, places=6)  # float32, as OpenRLHF's tensors
        self.assertEqual(out["extra_logs"]["length/length"].tolist(), [0.0, 11.0])  # N/A counts 0, as the gateway
        with self.assertRaisesRegex(rm.InvalidInputError, "'query\\[0\\]' does not start with 'prompts\\[0\\]'"):
            openrlhf.reward_func(["other"], ["<user>"], ["1"])


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
        # A component that does not apply is NaN in extra_logs (Python's json reads the bare NaN token);
        # scores is the first component (math/correct), 0 where it does not apply.
        nan_as_none = lambda xs: [None if math.isnan(x) else x for x in xs]  # noqa: E731
        self.assertEqual(nan_as_none(res.extra_logs["math/correct"]), [1.0, 0.0, None])
        self.assertEqual(nan_as_none(res.extra_logs["length/length"]), [None, None, 8.0])
        self.assertEqual(res.scores, [1.0, 0.0, 0.0])
        verl.reset()
        verl.configure(services=SERVICES, run_config=RUN)
        local = openrlhf.reward_func(req.query, req.prompts, req.labels)
        verl.reset()
        self.assertEqual(local["rewards"].tolist(), torch.tensor(res.rewards).tolist())

    def test_gateway_refusal_names_the_key(self):
        # A query not starting with its prompt is scored whole (as OpenRLHF's math_reward_func.py), not refused.
        with self.assertRaisesRegex(rm.MeshError, "HTTP 400: 'labels\\[0\\]' must be a string, a number or a Task"):
            openrlhf.post(GATEWAY, {"query": ["x"], "prompts": ["y"], "labels": [["1"]]}, timeout=30)
        res = openrlhf.post(GATEWAY, {"query": ["x \\boxed{1}"], "prompts": ["y"], "labels": ["1"]}, timeout=30)
        self.assertEqual(res.extra_logs["math/correct"], [1.0])


if __name__ == "__main__":
    unittest.main()
