"""The plaintext health-only port (`--health-port` / `LEARNER_HEALTH_PORT`) for Kubernetes' gRPC probes:
beside a TLS port with a bearer token, a plaintext client without a token gets SERVING there, the
Learner service is UNIMPLEMENTED there, NOT_SERVING shows once the server stops; and its settings."""

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

import grpc

import helpers
from reward_mesh_learner.proto import LEARNER_SERVICE_NAME, health_pb2, health_pb2_grpc, learner_pb2 as pb, learner_pb2_grpc
from reward_mesh_learner.security import SecurityConfigError, load_health_port, load_server_security
from reward_mesh_learner.server import serve

TOKEN = "py-health-token-0123456789"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class HealthPort(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="torch-learner-health-")
        cls.pki = helpers.make_pki(cls.tmp)
        cls.learner = helpers.make_learner(seed=5)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def start(self):
        env = {
            "LEARNER_GRPC_TLS_CERT_FILE": self.pki["server_cert"],
            "LEARNER_GRPC_TLS_KEY_FILE": self.pki["server_key"],
            "LEARNER_GRPC_TOKEN": TOKEN,
        }
        # All interfaces, as in a pod: TLS on the main port, plaintext on the health port anyway.
        return serve(self.learner, "0.0.0.0", 0, security=load_server_security(env), health_port=0)

    def test_plaintext_health_only_beside_tls_then_not_serving_on_stop(self):
        running = self.start()
        stopped = False
        try:
            self.assertIsNotNone(running.health_port)
            self.assertNotEqual(running.health_port, 0)
            self.assertNotEqual(running.health_port, running.port)
            local = f"127.0.0.1:{running.health_port}"
            with grpc.insecure_channel(local) as ch:
                h = health_pb2_grpc.HealthStub(ch)
                for service in ("", LEARNER_SERVICE_NAME):
                    self.assertEqual(h.Check(health_pb2.HealthCheckRequest(service=service), timeout=10).status, SERVING)
                statuses = h.List(health_pb2.HealthListRequest(), timeout=10).statuses
                self.assertEqual(statuses[LEARNER_SERVICE_NAME].status, SERVING)
                # Nothing but health there.
                learner = learner_pb2_grpc.LearnerStub(ch)
                self.assertEqual(helpers.code_of(lambda: learner.Info(pb.LearnerInfoRequest(), timeout=10)), grpc.StatusCode.UNIMPLEMENTED)
                # The main port refuses plaintext.
                with grpc.insecure_channel(f"127.0.0.1:{running.port}") as main:
                    stub = learner_pb2_grpc.LearnerStub(main)
                    self.assertEqual(helpers.code_of(lambda: stub.Info(pb.LearnerInfoRequest(), timeout=10)), grpc.StatusCode.UNAVAILABLE)
                # One status for both ports: stopping shows NOT_SERVING on the health port.
                watch = h.Watch(health_pb2.HealthCheckRequest(service=""), timeout=20)
                self.assertEqual(next(watch).status, SERVING)
                stopper = threading.Thread(target=running.stop, args=(3.0,))
                stopper.start()
                stopped = True
                self.assertEqual(next(watch).status, NOT_SERVING)
                watch.cancel()
                stopper.join(timeout=20)
                self.assertFalse(stopper.is_alive())
                self.assertEqual(
                    helpers.code_of(lambda: h.Check(health_pb2.HealthCheckRequest(service=""), timeout=2)),
                    grpc.StatusCode.UNAVAILABLE,
                )
        finally:
            if not stopped:
                running.stop(0.5)

    def test_without_a_health_port_nothing_more_is_bound(self):
        running = serve(self.learner, "127.0.0.1", 0)
        try:
            self.assertIsNone(running.health_port)
            self.assertIsNone(running.health_address)
        finally:
            running.stop(0.5)

    def test_settings(self):
        self.assertIsNone(load_health_port(None, {}, 0))
        self.assertIsNone(load_health_port(None, {"LEARNER_HEALTH_PORT": "  "}, 0))
        self.assertEqual(load_health_port(None, {"LEARNER_HEALTH_PORT": "8081"}, 50070), 8081)
        self.assertEqual(load_health_port(8082, {"LEARNER_HEALTH_PORT": "8081"}, 50070), 8082)  # the flag wins
        self.assertEqual(load_health_port(0, {}, 0), 0)
        cases = [
            ((None, {"LEARNER_HEALTH_PORT": "http"}, 0), "'LEARNER_HEALTH_PORT' must be an integer, got 'http'"),
            ((None, {"LEARNER_HEALTH_PORT": "70000"}, 0), "'LEARNER_HEALTH_PORT' must be in [0, 65535], got 70000"),
            ((-1, {}, 0), "'--health-port' must be in [0, 65535], got -1"),
            ((50070, {}, 50070), "'--health-port' must differ from the gRPC port (50070)"),
            ((None, {"LEARNER_HEALTH_PORT": "9000"}, 9000), "'LEARNER_HEALTH_PORT' must differ from the gRPC port (9000)"),
        ]
        for args, message in cases:
            with self.assertRaises(SecurityConfigError) as cm:
                load_health_port(*args)
            self.assertIn(message, str(cm.exception))

    def test_cli_refuses_bad_health_ports_before_loading_a_model(self):
        env = dict(os.environ, PYTHONPATH=helpers.ROOT)
        for k in list(env):
            if k.startswith(("LEARNER_", "REWARD_MESH_GRPC_")):
                del env[k]

        def run(*args, **extra):
            return subprocess.run([sys.executable, "-m", "reward_mesh_learner", "serve", *args], cwd=helpers.ROOT, env={**env, **extra}, capture_output=True, text=True, timeout=60)

        r = run("--port", "50070", "--health-port", "50070")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("torch-learner: '--health-port' must differ from the gRPC port (50070)", r.stderr)
        r = run("--port", "0", LEARNER_HEALTH_PORT="probe")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("torch-learner: 'LEARNER_HEALTH_PORT' must be an integer, got 'probe'", r.stderr)


if __name__ == "__main__":
    unittest.main()
