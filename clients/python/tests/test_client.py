"""The clients against the real length and math services and the trainer's ComputeAdvantages."""

import math
import unittest
from fractions import Fraction

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from tests.mesh import SERVICES, TRAINER
from tests.servers import BatchService, ScriptedService

import grpc
import reward_mesh as rm
from reward_mesh import builder


class RewardClientTest(unittest.TestCase):
    def setUp(self):
        self.math = rm.RewardClient(SERVICES["math"], timeout=30)
        self.length = rm.RewardClient(SERVICES["length"], timeout=30)

    def tearDown(self):
        self.math.close()
        self.length.close()

    def test_describe(self):
        info = self.math.describe()
        self.assertEqual(info.name, "math")
        self.assertEqual(list(info.domains), ["math"])
        self.assertEqual([c.name for c in info.components], ["correct", "format"])

    def test_score_and_stream(self):
        task = rm.math_task(["\\frac{1}{2}"], prompt="Half of one?")
        right = self.math.score(rm.rollout(task, "It is \\boxed{0.5}."))
        self.assertEqual({c.name: c.value for c in right.components}, {"correct": 1.0, "format": 1.0})
        self.assertEqual(right.service, "math")
        rs = [rm.rollout(task, f"\\boxed{{{a}}}") for a in ("1/2", "2", "0.5", "x")]
        out = self.math.score_stream(rs)
        self.assertEqual([r.rollout_id for r in out], [r.id for r in rs])
        self.assertEqual([next(c.value for c in r.components if c.name == "correct") for r in out], [1.0, 0.0, 1.0, 0.0])

    def test_service_error_names_the_field(self):
        bad = rm.rollout(rm.custom_task(prompt="p"), "x", metadata={"overlong.max_length": "abc"})
        with self.assertRaises(rm.MeshRpcError) as e:
            self.length.score(bad)
        self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("overlong.max_length", str(e.exception))
        self.assertIn(SERVICES["length"], str(e.exception))
        self.assertIn("Score", str(e.exception))

    def test_timeout_and_unreachable(self):
        # A deadline the call cannot meet: the service takes 2 s. (A microsecond timeout is not one: gRPC
        # deadlines have millisecond resolution, and a loopback Score can answer within the millisecond.)
        with ScriptedService(delay=2) as slow, rm.RewardClient(slow.address, timeout=30) as c:
            with self.assertRaises(rm.MeshTimeoutError):
                c.score_stream([rm.rollout(rm.custom_task(), "x")], timeout=0.05)
        with rm.RewardClient("127.0.0.1:1", timeout=2) as dead:
            with self.assertRaises(rm.MeshUnavailableError) as e:
                dead.describe()
        self.assertIn("127.0.0.1:1", str(e.exception))

    def test_builder_errors_name_the_argument(self):
        with self.assertRaisesRegex(rm.InvalidInputError, "'answers'"):
            rm.math_task([])
        with self.assertRaisesRegex(rm.InvalidInputError, "'entry_point'"):
            rm.code_task(test="def check(c): pass")
        with self.assertRaisesRegex(rm.InvalidInputError, "'ground_truth\\[0\\]'"):
            rm.tool_call_task([], [{"args": {}}])
        with self.assertRaisesRegex(rm.InvalidInputError, "not a rewardmesh.v1.Task"):
            rm.task_from_json({"maths": {}})
        with self.assertRaisesRegex(rm.InvalidInputError, "'index' must be < 'group_size'"):
            rm.rollout(rm.custom_task(), "x", index=2, group_size=2)

    def test_builder_kinds(self):
        self.assertEqual(builder.domain_of(rm.code_task(io_tests=[("1\n", "1\n")])), "code")
        t = rm.tool_call_task([{"name": "f"}], [{"name": "f", "arguments": {"a": 1}}], prompt=[{"role": "user", "content": "call f"}])
        self.assertEqual(t.tool_call.ground_truth[0].arguments_json, '{"a": 1}')
        self.assertEqual(t.messages[0].role, "user")
        self.assertEqual(builder.domain_of(rm.agent_task("banking", "user_task_0")), "agent")
        self.assertEqual(builder.domain_of(rm.custom_task({"k": "v"}, domain="chat")), "chat")
        self.assertEqual(rm.task_from_json('{"math": {"answers": ["2"]}}').math.answers, ["2"])


class MeshTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mesh = rm.Mesh(SERVICES, timeout=30)

    @classmethod
    def tearDownClass(cls):
        cls.mesh.close()

    def test_components_and_domains(self):
        self.assertEqual(sorted(self.mesh.components), ["length/length", "length/overlong", "math/correct", "math/format"])
        with self.assertRaisesRegex(rm.InvalidInputError, "'math/correctness' is not in the mesh \\(math emits math/correct, math/format\\)"):
            self.mesh.check_components(["math/correctness"])

    def test_each_rollout_goes_to_the_services_of_its_domain(self):
        rows = self.mesh.score([
            rm.rollout(rm.math_task(["4"]), "\\boxed{4}"),
            rm.rollout(rm.custom_task(prompt="hi"), "é" * 48),
        ])
        self.assertIsNone(rows[0]["length/length"])  # length does not score math
        self.assertEqual(rows[0]["math/correct"].value, 1.0)
        self.assertIsNone(rows[1]["math/correct"])
        self.assertEqual(rows[1]["length/length"].value, 48.0)  # code points
        # DAPO: 0 up to 64 - 32, then linear to -1 at 64.
        self.assertAlmostEqual(rows[1]["length/overlong"].value, -0.5)
        self.assertEqual(rm.weighted(rows[1], ["length/overlong", "math/correct"], [2.0, 1.0]), -1.0)

    def test_a_failed_mesh_closes_the_channels_it_opened(self):
        closed = []
        real_close = rm.RewardClient.close

        def close(client):
            closed.append(client.address)
            real_close(client)

        rm.RewardClient.close = close
        try:
            with self.assertRaises(rm.MeshUnavailableError):
                rm.Mesh({"math": SERVICES["math"], "length": "127.0.0.1:1"}, timeout=2)
            with self.assertRaisesRegex(rm.MeshError, "two addresses serve 'math'"):
                rm.Mesh([SERVICES["math"], SERVICES["length"], SERVICES["math"]], timeout=30)
        finally:
            rm.RewardClient.close = real_close
        self.assertEqual(closed, [SERVICES["math"], "127.0.0.1:1", SERVICES["math"], SERVICES["length"], SERVICES["math"]])

    def test_wrong_name_for_an_address(self):
        with self.assertRaisesRegex(rm.MeshError, "is 'math', not 'length'"):
            rm.Mesh({"length": SERVICES["math"]})


class ScoreBatchTest(unittest.TestCase):
    """ScoreBatch against the real length and math services, and the fallback to ScoreStream against a
    real service without it."""

    def setUp(self):
        self.math = rm.RewardClient(SERVICES["math"], timeout=30)
        self.length = rm.RewardClient(SERVICES["length"], timeout=30)

    def tearDown(self):
        self.math.close()
        self.length.close()

    def test_results_in_order_equal_to_score_stream(self):
        task = rm.math_task(["\\frac{1}{2}"], prompt="Half of one?")
        rs = [rm.rollout(task, f"\\boxed{{{a}}}") for a in ("1/2", "2", "0.5", "x")]
        out = self.math.score_batch(rs)
        self.assertTrue(self.math.has_score_batch)
        self.assertEqual([r.rollout_id for r in out], [r.id for r in rs])
        values = [[(c.name, c.value, c.status) for c in r.components] for r in out]
        self.assertEqual([v[0][1] for v in values], [1.0, 0.0, 1.0, 0.0])
        self.assertEqual(values, [[(c.name, c.value, c.status) for c in r.components] for r in self.math.score_stream(rs)])

    def test_request_bytes_are_protobufs_own(self):
        # The client frames ScoreBatchRequest from each rollout's serialization: the bytes must be those
        # protobuf writes (lengths on 1, 2 and 3 varint bytes included).
        from reward_mesh.client import score_batch_request_bytes
        rs = [rm.rollout(rm.math_task(["1"], prompt="p" * n), "x" * n, metadata={"k": "v" * n}) for n in (0, 1, 60, 127, 128, 300, 20000)]
        want = rm.reward_service_pb2.ScoreBatchRequest(requests=[rm.reward_service_pb2.ScoreRequest(rollout=r) for r in rs])
        got = score_batch_request_bytes(rs)
        self.assertEqual(got, want.SerializeToString())
        self.assertEqual(rm.reward_service_pb2.ScoreBatchRequest.FromString(got), want)
        # The framing writes ScoreBatchRequest and ScoreRequest by hand: a field added to either must fail
        # here (and be written there).
        fields = lambda m: [(f.name, f.number) for f in m.DESCRIPTOR.fields]  # noqa: E731
        self.assertEqual(fields(rm.reward_service_pb2.ScoreRequest), [("rollout", 1)])
        self.assertEqual(fields(rm.reward_service_pb2.ScoreBatchRequest), [("requests", 1)])

    def test_a_bad_rollout_gets_its_own_error_and_the_others_are_scored(self):
        good = [rm.rollout(rm.custom_task(prompt="p"), "a" * n) for n in (10, 50)]
        bad = rm.rollout(rm.custom_task(prompt="p"), "x", metadata={"overlong.max_length": "abc"})
        out = self.length.score_batch([good[0], bad, good[1]], return_errors=True)
        self.assertEqual([r.rollout_id for r in (out[0], out[2])], [good[0].id, good[1].id])
        self.assertEqual([next(c.value for c in r.components if c.name == "length") for r in (out[0], out[2])], [10.0, 50.0])
        err = out[1]
        self.assertIsInstance(err, rm.MeshRpcError)
        self.assertEqual(err.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(err.method, "ScoreBatch")
        self.assertIn("'requests[1].rollout.metadata", err.details)
        self.assertIn("overlong.max_length", err.details)
        self.assertIn(bad.id, err.details)
        # The message ScoreStream ends with for the same request.
        with self.assertRaises(rm.MeshRpcError) as stream:
            self.length.score_stream([good[0], bad, good[1]])
        self.assertTrue(err.details.startswith(stream.exception.details), (err.details, stream.exception.details))
        # Without return_errors the bad rollout's error is raised, and Mesh.score raises it too.
        with self.assertRaisesRegex(rm.MeshRpcError, "ScoreBatch failed: INVALID_ARGUMENT: 'requests\\[1\\]"):
            self.length.score_batch([good[0], bad])
        with rm.Mesh({"length": SERVICES["length"]}, timeout=30) as mesh:
            with self.assertRaisesRegex(rm.MeshRpcError, f"length.*ScoreBatch failed: INVALID_ARGUMENT: .*overlong.max_length.*{bad.id}"):
                mesh.score([good[0], bad])

    def test_an_oversized_batch_is_refused_naming_the_limit_and_the_client_splits(self):
        rs = [rm.rollout(rm.custom_task(prompt="p"), "a" * (i % 70)) for i in range(rm.MAX_BATCH + 1)]
        stub = rm.RewardClient(SERVICES["length"], timeout=30)
        try:
            req = rm.reward_service_pb2.ScoreBatchRequest(requests=[rm.reward_service_pb2.ScoreRequest(rollout=r) for r in rs])
            with self.assertRaises(grpc.RpcError) as e:
                stub._stub.ScoreBatch(req, timeout=30)
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("'requests' must hold at most 1024 ScoreRequests, got 1025", e.exception.details())
            with self.assertRaises(grpc.RpcError) as e:
                stub._stub.ScoreBatch(rm.reward_service_pb2.ScoreBatchRequest(), timeout=30)
            self.assertIn("'requests' must hold at least one ScoreRequest", e.exception.details())
        finally:
            stub.close()
        out = self.length.score_batch(rs)  # two calls: 1024 + 1
        self.assertEqual([r.rollout_id for r in out], [r.id for r in rs])
        self.assertEqual(next(c.value for c in out[-1].components if c.name == "length"), float(rm.MAX_BATCH % 70))

    def test_falls_back_to_score_stream_on_a_service_without_score_batch(self):
        # A service whose ScoreBatch records the attempt, then answers UNIMPLEMENTED (as grpcio's generated
        # servicer does): the client asks once, not once per call.
        with BatchService(unimplemented=True) as old:
            with rm.RewardClient(old.address, timeout=30) as c:
                rs = [rm.rollout(rm.custom_task(prompt="p"), r) for r in ("yes", "no", "yes yes")]
                out = c.score_batch(rs)
                self.assertFalse(c.has_score_batch)
                self.assertEqual([r.rollout_id for r in out], [r.id for r in rs])
                self.assertEqual([r.components[0].value for r in out], [1.0, 0.0, 1.0])
                c.score_batch(rs)  # straight to ScoreStream now
            self.assertEqual(old.calls, ["ScoreBatch", "ScoreStream", "ScoreStream"])
        with ScriptedService() as old:  # no ScoreBatch at all (the generated servicer's UNIMPLEMENTED)
            with rm.Mesh({"probe": old.address, "length": SERVICES["length"]}, timeout=30) as mesh:
                rows = mesh.score([rm.rollout(rm.custom_task(prompt="p"), "yes" * 3)] * 2)
                self.assertEqual([r["probe/a"].value for r in rows], [1.0, 1.0])
                self.assertEqual([r["length/length"].value for r in rows], [9.0, 9.0])
                self.assertFalse(mesh.clients["probe"].has_score_batch)
                self.assertTrue(mesh.clients["length"].has_score_batch)


class ConcurrentScoreTest(unittest.TestCase):
    def test_concurrent_calls_overlap(self):
        # OpenRLHF calls reward_func once per sample from asyncio.to_thread: many Mesh.score at once.
        delay = 1.0
        with ScriptedService(delay=delay) as slow, rm.Mesh({"probe": slow.address}, timeout=30) as mesh:
            one = [rm.rollout(rm.custom_task(prompt="p"), "yes")]
            mesh.score(one)  # connected
            barrier = threading.Barrier(8)

            def call(i):
                barrier.wait()
                t = time.monotonic()
                rows = mesh.score([rm.rollout(rm.custom_task(prompt="p"), "yes" * (i + 1))])
                return rows[0]["probe/a"].value, time.monotonic() - t

            start = time.monotonic()
            with ThreadPoolExecutor(8) as pool:
                out = list(pool.map(call, range(8)))
            wall = time.monotonic() - start
        self.assertEqual([v for v, _ in out], [1.0] * 8)
        # Serialized, 8 calls take 8 x 1 s; overlapped, about one call's time (4 s leaves room for a busy machine).
        self.assertLess(wall, 4 * delay, f"8 concurrent calls took {wall:.2f} s (one takes {delay} s)")

    def test_a_bad_timeout_is_refused_naming_it(self):
        for bad in (None, 0, -1, float("nan"), float("inf"), 1e9, "30", True):
            for make in (lambda t: rm.RewardClient(SERVICES["math"], timeout=t), lambda t: rm.Mesh({"math": SERVICES["math"]}, timeout=t),
                         lambda t: rm.AdvantagesClient(TRAINER, timeout=t)):
                with self.subTest(timeout=bad), self.assertRaisesRegex(rm.InvalidInputError, "the client's 'timeout' must be a number of seconds above 0"):
                    make(bad)
        # Any real number of seconds (numpy's too, where installed) is taken.
        with rm.RewardClient(SERVICES["math"], timeout=Fraction(30)) as c:
            self.assertEqual(c.timeout, 30.0)
            self.assertEqual(c.score(rm.rollout(rm.math_task(["1"]), "\\boxed{1}"), timeout=Fraction(30)).service, "math")
        one = rm.rollout(rm.math_task(["1"]), "\\boxed{1}")
        with rm.Mesh({"math": SERVICES["math"]}, timeout=30) as mesh, rm.RewardClient(SERVICES["math"], timeout=30) as c:
            for bad in (float("nan"), float("inf"), 1e9, "1", True):
                with self.subTest(timeout=bad), self.assertRaisesRegex(rm.InvalidInputError, "'timeout' must be a number of seconds"):
                    mesh.score([one], timeout=bad)
                with self.assertRaisesRegex(rm.InvalidInputError, "'timeout' must be a number of seconds"):
                    c.score(one, timeout=bad)
        for bad in ("0", "-2", "inf", "1e9", "soon"):
            with self.subTest(env=bad), self.assertRaisesRegex(rm.InvalidInputError, f"'REWARD_MESH_TIMEOUT' must be seconds above 0 and up to 1e\\+08, got '{bad}'"):
                rm.Mesh.from_env({"REWARD_MESH_SERVICES": f"math={SERVICES['math']}", "REWARD_MESH_TIMEOUT": bad})

    def test_timeout_zero_is_a_timeout(self):
        # Every time, on every method: a deadline already passed fails before the call starts (grpcio alone,
        # given timeout=0, sometimes let a fast answer through on its single-threaded unary-stream path).
        one = rm.rollout(rm.math_task(["1"]), "\\boxed{1}")
        with rm.Mesh({"math": SERVICES["math"]}, timeout=30) as mesh:
            mesh.score([one])  # connected: the answer could come back at once
            for timeout in [0] * 20 + [-1]:
                with self.assertRaisesRegex(rm.MeshTimeoutError, "DEADLINE_EXCEEDED: deadline exceeded before the call started"):
                    mesh.score([one], timeout=timeout)
        with rm.RewardClient(SERVICES["math"], timeout=30) as c:
            c.score(one)
            for call in (lambda: c.score(one, timeout=0), lambda: c.score_batch([one] * 3, timeout=0),
                         lambda: c.score_stream([one], timeout=0), lambda: c.describe(timeout=0)):
                for _ in range(5):
                    with self.assertRaises(rm.MeshTimeoutError) as cm:
                        call()
                    self.assertIn(SERVICES["math"], str(cm.exception))
                    self.assertIn("DEADLINE_EXCEEDED: deadline exceeded before the call started", str(cm.exception))


class ResultValidationTest(unittest.TestCase):
    """A result that breaks its service's Describe is an error naming the service, component and rollout,
    as the trainer rejects it (never a silent None or an out-of-range reward)."""

    def _refused(self, rewrite, pattern):
        with ScriptedService(result=rewrite) as bad, rm.Mesh({"probe": bad.address}, timeout=30) as mesh:
            rs = [rm.rollout(rm.custom_task(prompt="p"), "yes"), rm.rollout(rm.custom_task(prompt="p"), "no")]
            with self.assertRaisesRegex(rm.MeshError, pattern.replace("ID", rs[1].id)):
                mesh.score(rs)

    def test_missing_component(self):
        def drop_b(rollout, res):
            if rollout.response == "no":
                del res.components[1]
            return res
        self._refused(drop_b, "service 'probe', rollout 'ID' \\(rollouts\\[1\\]\\): component 'b' is missing")

    def test_non_finite_and_out_of_range(self):
        def value(v):
            def rewrite(rollout, res):
                if rollout.response == "no":
                    res.components[0].value = v
                return res
            return rewrite
        self._refused(value(math.nan), "rollout 'ID' .*component 'a' = nan is not finite")
        self._refused(value(math.inf), "component 'a' = inf is not finite")
        self._refused(value(1.5), "rollout 'ID' .*component 'a' = 1.5 is outside \\[0.0, 1.0\\]")

    def test_duplicate_and_error_not_minimum(self):
        def dup(rollout, res):
            res.components.append(res.components[0])
            return res
        self._refused(dup, "component 'a' appears twice")

        def error(rollout, res):
            if rollout.response == "no":
                res.components[1].status = rm.reward_pb2.COMPONENT_STATUS_ERROR
                res.components[1].value = 0.02
            return res
        self._refused(error, "rollout 'ID' .*'b' = 0.02 with status COMPONENT_STATUS_ERROR; the minimum is 0.0")


class AdvantagesClientTest(unittest.TestCase):
    def setUp(self):
        self.client = rm.AdvantagesClient(TRAINER, timeout=30)

    def tearDown(self):
        self.client.close()

    def test_timeout_zero_is_a_timeout(self):
        with self.assertRaisesRegex(rm.MeshTimeoutError, f"trainer at {TRAINER}: ComputeAdvantages failed: DEADLINE_EXCEEDED"):
            self.client.compute([[[1.0], [0.0]]], estimator="grpo", timeout=0)

    def test_grpo_numbers(self):
        res = self.client.compute([[[1.0], [0.0], [0.0], [1.0]]], estimator="grpo")
        self.assertEqual(res.estimator, "grpo")
        std = math.sqrt(sum((x - 0.5) ** 2 for x in (1, 0, 0, 1)) / 3)
        for got, r in zip(res.groups[0].advantages, (1, 0, 0, 1)):
            self.assertAlmostEqual(got, (r - 0.5) / (std + 1e-6), places=5)

    def test_corr_grpo_with_not_applicable_and_diagnostics(self):
        groups = [{"group_id": "g", "rollouts": [[1.0, None], [0.0, 0.2], [1.0, 0.9], [0.0, 0.4]]}]
        res = self.client.compute(groups, estimator="corr_grpo", components=["math/correct", "length/overlong"],
                                  weights=[1.0, 0.5], diagnostics=True)
        self.assertEqual(res.estimator, "grpo_covariance_coefficient")
        self.assertEqual(list(res.components), ["math/correct", "length/overlong"])
        g = res.groups[0]
        self.assertEqual(g.group_id, "g")
        self.assertEqual(len(g.advantages), 4)
        self.assertAlmostEqual(sum(g.advantages), 0.0, places=9)
        self.assertEqual(g.diagnostics.group_size, 4)
        self.assertGreater(g.advantages[2], g.advantages[1])

    def test_sgrpo_and_dynamic_sampling(self):
        groups = [[[1.0], [0.0], [1.0]], [[1.0], [1.0], [1.0]]]
        res = self.client.compute(groups, estimator="grpo", sgrpo={"p": 0.1}, dynamic_sampling=True, diagnostics=True)
        self.assertTrue(res.groups[0].kept)
        self.assertFalse(res.groups[1].kept)
        self.assertAlmostEqual(res.groups[0].diagnostics.sgrpo.p, 0.1)

    def test_invalid_batch_names_the_field(self):
        with self.assertRaises(rm.MeshRpcError) as e:
            self.client.compute([[[1.0], [float("nan")]]], estimator="grpo")
        self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("groups[0].rollouts[1].values[0]", e.exception.details)
        with self.assertRaisesRegex(rm.InvalidInputError, "'groups\\[0\\].rollouts\\[0\\].values\\[0\\]' must be a number"):
            self.client.compute([[["x"]]])


if __name__ == "__main__":
    unittest.main()
