"""The OpenRLHF adapter: the remote-RM request/response as OpenRLHF sends and reads them, `reward_func`
called as OpenRLHF calls a `--remote_rm_url` Python file (`reward_func(queries, prompts, labels)`), and
the mesh's HTTP endpoint (`reward-mesh gateway`) answering a request in OpenRLHF's shape."""

import json
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
        self.assertEqual(out["extra_logs"]["length/length"][1].item(), 11.0)
        self.assertTrue(torch.isnan(out["extra_logs"]["length/length"][0]))


@unittest.skipUnless(GATEWAY, "REWARD_MESH_TEST_GATEWAY is not set (the harness sets it when `reward-mesh gateway` exists)")
class GatewayTest(unittest.TestCase):
    def test_gateway_answers_openrlhfs_request(self):
        prompts = ["Q: 3+4? A: ", "Q: 3+4? A: "]
        req = openrlhf.RemoteRMRequest([prompts[0] + "\\boxed{7}", prompts[1] + "\\boxed{8}"], prompts, ["7", "7"])
        res = openrlhf.post(GATEWAY, req, timeout=30)
        self.assertEqual(len(res.rewards), 2)
        self.assertGreater(res.rewards[0], res.rewards[1])


if __name__ == "__main__":
    unittest.main()
