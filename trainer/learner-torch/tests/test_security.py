"""TLS, mutual TLS and the bearer token of the learner's gRPC server, with certificates made by openssl for
this run; the plaintext policy; wrong settings named by the command line."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import grpc

import helpers
from reward_mesh_learner.proto import LEARNER_SERVICE_NAME, health_pb2, health_pb2_grpc, learner_pb2 as pb, learner_pb2_grpc
from reward_mesh_learner.security import SecurityConfigError, ServerSecurity, is_loopback_host, load_server_security
from reward_mesh_learner.server import serve

TOKEN = "py-test-token-0123456789"
READ = helpers.read_bytes


class Tls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="torch-learner-tls-")
        cls.pki = helpers.make_pki(cls.tmp)
        cls.learner = helpers.make_learner(seed=3)
        env = {
            "LEARNER_GRPC_TLS_CERT_FILE": cls.pki["server_cert"],
            "LEARNER_GRPC_TLS_KEY_FILE": cls.pki["server_key"],
            "REWARD_MESH_GRPC_TLS_CLIENT_CA_FILE": cls.pki["ca"],
            "REWARD_MESH_GRPC_TOKEN": TOKEN,
        }
        cls.mtls = serve(cls.learner, "127.0.0.1", 0, security=load_server_security(env))
        cls.tls = serve(cls.learner, "127.0.0.1", 0, security=load_server_security({k: v for k, v in env.items() if "CLIENT_CA" not in k and "TOKEN" not in k}))

    @classmethod
    def tearDownClass(cls):
        cls.mtls.stop(0.5)
        cls.tls.stop(0.5)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def channel(self, server, ca="ca", client=None):
        creds = grpc.ssl_channel_credentials(
            root_certificates=READ(self.pki[ca]),
            private_key=READ(self.pki[f"{client}_key"]) if client else None,
            certificate_chain=READ(self.pki[f"{client}_cert"]) if client else None,
        )
        return grpc.secure_channel(server.address, creds)

    def info(self, channel, token=None):
        md = (("authorization", f"Bearer {token}"),) if token else None
        with channel as ch:
            return helpers.code_of(lambda: learner_pb2_grpc.LearnerStub(ch).Info(pb.LearnerInfoRequest(), timeout=10, metadata=md))

    def test_tls_serves_a_client_trusting_the_ca_and_refuses_others(self):
        self.assertEqual(self.tls.security, "TLS")
        self.assertEqual(self.info(self.channel(self.tls)), "ok")
        self.assertEqual(self.info(grpc.insecure_channel(self.tls.address)), grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(self.info(self.channel(self.tls, ca="other_ca")), grpc.StatusCode.UNAVAILABLE)

    def test_mutual_tls_needs_a_client_certificate_from_the_ca(self):
        self.assertEqual(self.mtls.security, "mutual TLS, bearer token")
        self.assertEqual(self.info(self.channel(self.mtls, client="client"), TOKEN), "ok")
        self.assertEqual(self.info(self.channel(self.mtls), TOKEN), grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(self.info(self.channel(self.mtls, client="other_client"), TOKEN), grpc.StatusCode.UNAVAILABLE)

    def test_token_is_required_on_unary_and_streaming_calls_but_not_on_health(self):
        with self.channel(self.mtls, client="client") as ch:
            stub = learner_pb2_grpc.LearnerStub(ch)
            for md, details in ((None, "missing bearer token"), ((("authorization", f"Bearer {TOKEN}x"),), "invalid bearer token"), ((("authorization", TOKEN),), "not 'Bearer <token>'")):
                with self.assertRaises(grpc.RpcError) as cm:
                    stub.Info(pb.LearnerInfoRequest(), timeout=10, metadata=md)
                self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
                self.assertIn(details, cm.exception.details())
            v0 = stub.Info(pb.LearnerInfoRequest(), timeout=10, metadata=(("authorization", f"Bearer {TOKEN}"),)).policy_version
            with self.assertRaises(grpc.RpcError) as cm:
                stub.TrainStep(iter([pb.LearnerTrainStepRequest(header=pb.LearnerTrainStepHeader(idempotency_key="t", sample_count=0))]), timeout=10)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
            self.assertEqual(stub.Info(pb.LearnerInfoRequest(), timeout=10, metadata=(("authorization", f"bearer {TOKEN}"),)).policy_version, v0, "the refused TrainStep changed nothing")
            health = health_pb2_grpc.HealthStub(ch)
            st = health.Check(health_pb2.HealthCheckRequest(service=LEARNER_SERVICE_NAME), timeout=10).status
            self.assertEqual(st, health_pb2.HealthCheckResponse.SERVING)

    def test_plaintext_only_on_loopback_unless_allowed(self):
        with self.assertRaises(SecurityConfigError) as cm:
            serve(self.learner, "0.0.0.0", 0)
        self.assertIn("refusing a plaintext gRPC server on '0.0.0.0'", str(cm.exception))
        self.assertIn("LEARNER_GRPC_INSECURE=1", str(cm.exception))
        s = serve(self.learner, "0.0.0.0", 0, security=load_server_security({"REWARD_MESH_GRPC_INSECURE": "1"}))
        s.stop(0)
        s = serve(self.learner, "0.0.0.0", 0, security=load_server_security({"LEARNER_GRPC_TLS_CERT_FILE": self.pki["server_cert"], "LEARNER_GRPC_TLS_KEY_FILE": self.pki["server_key"]}))
        s.stop(0)
        for h in ("127.0.0.1", "127.9.9.9", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"):
            self.assertTrue(is_loopback_host(h), h)
        for h in ("0.0.0.0", "::", "", "10.0.0.1", "example.com"):
            self.assertFalse(is_loopback_host(h), h)

    def test_settings_errors_name_the_setting(self):
        p = self.pki

        def err(env, **flags):
            with self.assertRaises(SecurityConfigError) as cm:
                load_server_security(env, **flags)
            return str(cm.exception)

        self.assertRegex(err({"LEARNER_GRPC_TLS_CERT_FILE": p["server_cert"]}), r"^'--tls-key-file' .*must be set with LEARNER_GRPC_TLS_CERT_FILE")
        self.assertRegex(err({}, tls_cert_file="/nonexistent.crt", tls_key_file=p["server_key"]), r"^'--tls-cert-file' cannot read '/nonexistent.crt'")
        self.assertRegex(err({"LEARNER_GRPC_TLS_CERT_FILE": p["server_cert"], "LEARNER_GRPC_TLS_KEY_FILE": p["client_key"]}), r"^'LEARNER_GRPC_TLS_KEY_FILE' .*not the private key of the certificate in LEARNER_GRPC_TLS_CERT_FILE")
        self.assertRegex(err({"LEARNER_GRPC_TLS_CERT_FILE": p["server_key"], "LEARNER_GRPC_TLS_KEY_FILE": p["server_key"]}), r"^'LEARNER_GRPC_TLS_CERT_FILE' .*holds no PEM certificate")
        self.assertRegex(err({"REWARD_MESH_GRPC_TLS_CLIENT_CA_FILE": p["ca"]}), r"^'REWARD_MESH_GRPC_TLS_CLIENT_CA_FILE' needs TLS")
        self.assertRegex(err({"REWARD_MESH_GRPC_INSECURE": "yes"}, tls_cert_file=p["server_cert"], tls_key_file=p["server_key"]), r"^'REWARD_MESH_GRPC_INSECURE' is set together with --tls-cert-file")
        self.assertRegex(err({"LEARNER_GRPC_INSECURE": "maybe"}), r"^'LEARNER_GRPC_INSECURE' must be a boolean")
        short = err({"LEARNER_GRPC_TOKEN": "s3cret"})
        self.assertRegex(short, r"^'LEARNER_GRPC_TOKEN' must be at least 16 characters, got 6")
        self.assertNotIn("s3cret", short)
        self.assertRegex(err({"LEARNER_GRPC_TOKEN": TOKEN, "LEARNER_GRPC_TOKEN_FILE": "/x"}), r"^'LEARNER_GRPC_TOKEN_FILE' is set together with LEARNER_GRPC_TOKEN")
        token_file = os.path.join(self.tmp, "token")
        with open(token_file, "w", encoding="utf-8") as f:
            f.write(TOKEN + "\n")
        self.assertEqual(load_server_security({}, token_file=token_file).token, TOKEN)
        self.assertNotIn(TOKEN, repr(load_server_security({}, token_file=token_file)))
        self.assertEqual(ServerSecurity().describe(), "plaintext (loopback only)")

    def test_cli_refuses_a_public_plaintext_bind_and_bad_settings_before_loading_a_model(self):
        env = dict(os.environ, PYTHONPATH=helpers.ROOT)
        for k in list(env):
            if k.startswith(("LEARNER_GRPC_", "REWARD_MESH_GRPC_")):
                del env[k]

        def run(*args, **extra):
            return subprocess.run([sys.executable, "-m", "reward_mesh_learner", "serve", *args], cwd=helpers.ROOT, env={**env, **extra}, capture_output=True, text=True, timeout=60)

        r = run("--host", "0.0.0.0", "--port", "0")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertRegex(r.stderr, r"torch-learner: '--insecure' is not set and TLS is not configured: refusing a plaintext gRPC server on '0.0.0.0'")
        r = run("--port", "0", LEARNER_GRPC_TLS_CERT_FILE="/nonexistent/tls.crt", LEARNER_GRPC_TLS_KEY_FILE=self.pki["server_key"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("'LEARNER_GRPC_TLS_CERT_FILE' cannot read '/nonexistent/tls.crt'", r.stderr)


if __name__ == "__main__":
    unittest.main()
