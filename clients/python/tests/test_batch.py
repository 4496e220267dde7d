"""ScoreBatch from the client's side: services and calls in parallel, batches cut by bytes as well as by
count, the fallback to ScoreStream remembered (for a while), cancellation reaching the services, input
types, and a forked child. Against real gRPC servers: the mesh's length service, and BatchService (a
Python service with ScoreBatch that takes its time, fails, or lacks it on demand)."""

import os
import signal
import subprocess
import sys
import threading
import time
import unittest

import grpc

import reward_mesh as rm
from reward_mesh import client as client_module
from tests.mesh import SERVICES
from tests.servers import BatchService


def _rollouts(n, response="yes", size=0):
    return [rm.rollout(rm.custom_task(prompt="p"), (response + "x" * size) if size else f"{response} {i}") for i in range(n)]


class ParallelTest(unittest.TestCase):
    DELAY = 2.0  # long enough that, on a busy machine, calls that should overlap still do

    def test_services_are_scored_in_parallel(self):
        with BatchService(name="slow1", delay=self.DELAY) as a, BatchService(name="slow2", delay=self.DELAY) as b:
            # Both services record the calls they handle at once; a shared counter sees both calls overlap.
            overlap = {"now": 0, "max": 0}
            lock = threading.Lock()
            for svc in (a, b):
                wait = svc._wait_delay

                def counted(context, wait=wait):
                    with lock:
                        overlap["now"] += 1
                        overlap["max"] = max(overlap["max"], overlap["now"])
                    try:
                        return wait(context)
                    finally:
                        with lock:
                            overlap["now"] -= 1
                svc._wait_delay = counted
            with rm.Mesh({"slow1": a.address, "slow2": b.address}, timeout=30) as mesh:
                rs = _rollouts(4)
                rows = mesh.score(rs)
                self.assertEqual([r["slow1/a"].value for r in rows], [1.0] * 4)
                self.assertEqual([r["slow2/a"].value for r in rows], [1.0] * 4)
            self.assertEqual((a.calls.count("ScoreBatch"), b.calls.count("ScoreBatch")), (1, 1))
        # One after the other, the second call would start after the first ended (each takes DELAY s).
        self.assertEqual(overlap["max"], 2, "the two services were not called at the same time")

    def test_the_calls_of_one_service_are_in_parallel(self):
        with BatchService(delay=self.DELAY) as s, rm.RewardClient(s.address, timeout=30) as c:
            c.score_batch(_rollouts(1))  # has ScoreBatch: no probe from now on
            rs = _rollouts(2 * rm.MAX_BATCH + 1)
            out = c.score_batch(rs)
            self.assertEqual([r.rollout_id for r in out], [r.id for r in rs])
            self.assertEqual(sorted(s.batch_sizes[1:]), [1, rm.MAX_BATCH, rm.MAX_BATCH])
        self.assertEqual(s.max_in_flight, 3, "the 3 calls of the batch were not in flight at once")


class BytesTest(unittest.TestCase):
    def test_1024_rollouts_of_8_kb_are_cut_by_bytes(self):
        # 1024 × 8.2 KB ≈ 8.4 MB: over what a service accepts in one message (8 MiB - 64 KiB + 16 bytes);
        # one ScoreBatch call of them all is refused RESOURCE_EXHAUSTED. The client cuts at MAX_BATCH_BYTES.
        rs = _rollouts(1024, response="a", size=8200)
        frames = client_module._frames(rs)
        self.assertGreater(sum(len(p) + len(b) for p, b in frames), 8 * 1024 * 1024)
        ranges = client_module._split(frames)
        self.assertEqual(len(ranges), 3)
        with rm.RewardClient(SERVICES["length"], timeout=60) as c:
            with self.assertRaises(grpc.RpcError) as e:
                list(c._score_batch_call(rm.client.score_batch_request_bytes(rs), timeout=60))
            self.assertEqual(e.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            out = c.score_batch(rs)
            self.assertTrue(c.has_score_batch)
        self.assertEqual([r.rollout_id for r in out], [r.id for r in rs])
        self.assertEqual({next(x.value for x in r.components if x.name == "length") for r in out}, {8201.0})
        with rm.Mesh({"length": SERVICES["length"]}, timeout=60) as mesh:
            rows = mesh.score(rs)
        self.assertEqual({r["length/length"].value for r in rows}, {8201.0})

    def test_a_request_over_the_service_limit_is_split(self):
        # A service with a 1 MiB limit: 300 × 8 KB requests (2.4 MB, under MAX_BATCH_BYTES) are refused
        # unscored ("Received message larger than max"): the client halves the call until it fits.
        with BatchService(max_message=1024 * 1024) as s, rm.RewardClient(s.address, timeout=30) as c:
            rs = _rollouts(300, size=8000)
            out = c.score_batch(rs)
            self.assertEqual([r.rollout_id for r in out], [r.id for r in rs])
            # The refused calls never reach the handler: 4 × 75 accepted (300 and 2 × 150 refused).
            self.assertEqual(s.batch_sizes, [75, 75, 75, 75])
            self.assertEqual(s.calls.count("ScoreStream"), 0)
            self.assertEqual(set(s.scored.values()), {1})
        # One rollout over the limit goes over ScoreStream, whose error names the size.
        with BatchService(max_message=64 * 1024) as s, rm.RewardClient(s.address, timeout=30) as c:
            c.score_batch(_rollouts(1))
            with self.assertRaises(rm.MeshRpcError) as e:
                c.score_batch(_rollouts(1, size=100_000) + _rollouts(2))
            self.assertEqual(e.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertEqual(e.exception.method, "ScoreStream")
            self.assertIn("larger than max", str(e.exception))

    def test_a_response_over_the_limit_is_redone_once_over_score_stream(self):
        # Results with 8 KB of details: 300 of them (2.4 MB) are scored, then refused on the way out ("Sent
        # message larger than max"). Halving would score them again and again; the client redoes the call
        # once over ScoreStream (one result a message), so each rollout is scored at most twice.
        with BatchService(max_message=1024 * 1024, details=8192) as s, rm.RewardClient(s.address, timeout=30) as c:
            rs = _rollouts(300)
            out = c.score_batch(rs)
            self.assertEqual([r.rollout_id for r in out], [r.id for r in rs])
            self.assertEqual([len(r.components[0].details) for r in out], [8192] * 300)
            self.assertEqual(s.calls, ["ScoreBatch", "ScoreStream"])
            self.assertEqual(s.scored, {r.id: 2 for r in rs})
        # The same when it is this client's receive limit ("Received message larger than max", written by
        # the client about the response): a client whose channels take at most 1 MiB a message.
        saved = client_module._CHANNEL_OPTIONS
        client_module._CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 1024 * 1024)]
        try:
            with BatchService(details=8192) as s, rm.RewardClient(s.address, timeout=30) as c:
                rs = _rollouts(300)
                out = c.score_batch(rs)
                self.assertEqual([r.rollout_id for r in out], [r.id for r in rs])
                self.assertEqual(s.calls, ["ScoreBatch", "ScoreStream"])
                self.assertEqual(s.scored, {r.id: 2 for r in rs})
        finally:
            client_module._CHANNEL_OPTIONS = saved

    def test_a_busy_server_is_not_retried(self):
        # RESOURCE_EXHAUSTED that is not about size (a server over its concurrency limit, a proxy's quota):
        # raised as the service said it, with no second call (halves would multiply the load).
        with BatchService(busy=True) as s, rm.RewardClient(s.address, timeout=30) as c:
            with self.assertRaises(rm.MeshRpcError) as e:
                c.score_batch(_rollouts(300))
            self.assertEqual(e.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertEqual(e.exception.method, "ScoreBatch")
            self.assertIn("busy", str(e.exception))
            self.assertEqual(s.calls, ["ScoreBatch"])
            self.assertEqual(s.scored, {})

    def test_too_big_tells_request_from_response(self):
        # The texts gRPC core (grpcio) and grpc-js write; the size says which message "Received" was about.
        too_big = client_module._too_big
        self.assertEqual(too_big("Received message larger than max (2400000 vs. 1048576)", 2400000), "request")
        self.assertEqual(too_big("Received message larger than max (2400000 vs 1048576)", 2400000), "request")
        self.assertEqual(too_big("Received message larger than max (9000000 vs. 1048576)", 2400000), "response")
        self.assertEqual(too_big("Sent message larger than max (9000000 vs. 1048576)", 2400000), "response")
        self.assertEqual(too_big("Sent message larger than max (2400000 vs. 1048576)", 2400000), "request")
        self.assertEqual(too_big("Response message is larger than max (9000000 vs. 1048576)", 2400000), "response")
        self.assertEqual(too_big("grpc: received message larger than max (2400000 vs. 1048576)", 2400000), "request")
        self.assertEqual(too_big("grpc: trying to send message larger than max (9000000 vs. 1048576)", 2400000), "response")
        self.assertIsNone(too_big("busy", 2400000))
        self.assertIsNone(too_big("quota larger than max (2400000 vs. 1048576)", 2400000))
        self.assertIsNone(too_big("", 2400000))


class CancelTest(unittest.TestCase):
    def _cancelled_within(self, service, seconds, want=1):
        end = time.monotonic() + seconds
        while time.monotonic() < end and service.cancelled < want:
            time.sleep(0.02)
        return service.cancelled

    def test_a_failed_service_cancels_the_others(self):
        # Either order: the failing call in a pool thread or in the caller's thread.
        for order in (("slow", "bad"), ("bad", "slow")):
            with self.subTest(order=order), BatchService(name="slow", delay=20) as slow, BatchService(name="bad", fail=True, fail_after=0.5) as bad:
                addresses = {"slow": slow.address, "bad": bad.address}
                with rm.Mesh({k: addresses[k] for k in order}, timeout=30) as mesh:
                    start = time.monotonic()
                    with self.assertRaisesRegex(rm.MeshRpcError, "'bad'.*ScoreBatch failed: INTERNAL: failed on purpose"):
                        mesh.score(_rollouts(3))
                    self.assertLess(time.monotonic() - start, 10)  # not the slow service's 20 s
                    self.assertEqual(self._cancelled_within(slow, 10), 1, "the slow service kept scoring")

    def test_a_failed_call_cancels_the_other_calls_of_the_batch(self):
        with BatchService(delay=20, fail_after=0.5) as s, rm.RewardClient(s.address, timeout=30) as c:
            s.delay = 0
            c.score_batch(_rollouts(1))
            s.delay = 20
            rs = _rollouts(rm.MAX_BATCH) + _rollouts(1, response="fail")  # the failing call runs in this thread
            with self.assertRaisesRegex(rm.MeshRpcError, "INTERNAL: failed on purpose"):
                c.score_batch(rs)
            self.assertEqual(self._cancelled_within(s, 10), 1)
            rs = _rollouts(1, response="fail") + _rollouts(rm.MAX_BATCH)  # ... in a pool thread
            with self.assertRaisesRegex(rm.MeshRpcError, "INTERNAL: failed on purpose"):
                c.score_batch(rs)
            self.assertEqual(self._cancelled_within(s, 10, want=2), 2)

    def test_an_interrupt_cancels_the_calls(self):
        # Ctrl-C (KeyboardInterrupt) while a batch is in flight: the services stop scoring it.
        with BatchService(name="s1", delay=20) as a, BatchService(name="s2", delay=20) as b:
            with rm.Mesh({"s1": a.address, "s2": b.address}, timeout=30) as mesh:
                old = signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
                try:
                    signal.setitimer(signal.ITIMER_REAL, 0.5)
                    with self.assertRaises(KeyboardInterrupt):
                        mesh.score(_rollouts(2))
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    signal.signal(signal.SIGALRM, old)
                self.assertEqual(self._cancelled_within(a, 10), 1)
                self.assertEqual(self._cancelled_within(b, 10), 1)


class FallbackTest(unittest.TestCase):
    def test_the_fallback_is_remembered(self):
        with BatchService(unimplemented=True) as old, rm.RewardClient(old.address, timeout=30) as c:
            rs = _rollouts(3)
            self.assertEqual([r.rollout_id for r in c.score_batch(rs)], [r.id for r in rs])
            self.assertFalse(c.has_score_batch)
            self.assertEqual([r.rollout_id for r in c.score_batch(rs)], [r.id for r in rs])
            self.assertEqual(old.calls, ["ScoreBatch", "ScoreStream", "ScoreStream"])

    def test_the_fallback_expires(self):
        # The real window; its start moved back past it instead of waiting (no timing involved).
        with BatchService(unimplemented=True) as old, rm.RewardClient(old.address, timeout=30) as c:
            c.score_batch(_rollouts(2))
            c.score_batch(_rollouts(2))
            self.assertEqual(old.calls, ["ScoreBatch", "ScoreStream", "ScoreStream"])
            c._lacked_at -= client_module.SCORE_BATCH_RETRY_AFTER + 1
            old.unimplemented = False  # upgraded behind the same address
            c.score_batch(_rollouts(2))
            self.assertTrue(c.has_score_batch)
            self.assertEqual(old.calls, ["ScoreBatch", "ScoreStream", "ScoreStream", "ScoreBatch"])

    def test_a_multi_call_batch_probes_with_its_first_call(self):
        with BatchService(unimplemented=True) as old, rm.RewardClient(old.address, timeout=30) as c:
            rs = _rollouts(2 * rm.MAX_BATCH + 5)
            out = c.score_batch(rs)
            self.assertEqual([r.rollout_id for r in out], [r.id for r in rs])
            # One ScoreBatch attempt (the first 1024), not three; its rollouts and the rest over ScoreStream.
            self.assertEqual(old.calls, ["ScoreBatch", "ScoreStream", "ScoreStream"])
            self.assertEqual(old.batch_sizes, [rm.MAX_BATCH])


class InputTest(unittest.TestCase):
    def test_a_rollout_of_the_wrong_type_is_named(self):
        with BatchService() as s, rm.RewardClient(s.address, timeout=30) as c, rm.Mesh({"probe": s.address}) as mesh:
            good = _rollouts(1)[0]
            pattern = "'rollouts\\[1\\]' must be a rewardmesh.v1.Rollout .*got builtins.dict"
            with self.assertRaisesRegex(rm.InvalidInputError, pattern):
                c.score_batch([good, {"response": "x"}])
            with self.assertRaisesRegex(rm.InvalidInputError, pattern):
                mesh.score([good, {"response": "x"}])
            with self.assertRaisesRegex(rm.InvalidInputError, "'rollouts\\[0\\]' must be a rewardmesh.v1.Rollout .*got .*Task"):
                c.score_stream([rm.custom_task()])
            with self.assertRaisesRegex(rm.InvalidInputError, "'rollout\\[0\\]' must be"):
                c.score("hello")
            self.assertEqual([x for x in s.calls if x != "Describe"], [])  # nothing was sent


_FORK = """
import os, sys
sys.path.insert(0, ".")
import reward_mesh as rm
from tests.mesh import SERVICES
rs = lambda: [rm.rollout(rm.custom_task(prompt="p"), "yes"), rm.rollout(rm.math_task(["1"]), "\\\\boxed{1}")]
with rm.Mesh(SERVICES, timeout=10) as mesh:
    mesh.score(rs())  # the pool's thread started, and idle
pid = os.fork()
if pid == 0:
    code = 1
    try:
        with rm.Mesh(SERVICES, timeout=10) as mesh:
            rows = mesh.score(rs())
        code = 0 if rows[1]["math/correct"].value == 1.0 and rows[0]["length/length"].value == 3.0 else 2
    finally:
        os._exit(code)
_, status = os.waitpid(pid, 0)
print("child exit", os.waitstatus_to_exitcode(status))
"""


class ForkTest(unittest.TestCase):
    def test_a_forked_child_can_score(self):
        # A data loader forked after the parent scored: the parent's pool threads do not exist in the child.
        # Its own process, a client only (gRPC servers in this test process would not survive a fork).
        r = subprocess.run([sys.executable, "-c", _FORK], cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("child exit 0", r.stdout, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
