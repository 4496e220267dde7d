"""The gRPC server end to end, in process on port 0 (Info, Generate, TrainStep streams including
malformed ones, ComputeLogprobs, SyncWeights, SaveCheckpoint, health), and the CLI as a subprocess."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

import grpc

import helpers
from reward_mesh_learner.proto import LEARNER_SERVICE_NAME, health_pb2, health_pb2_grpc, learner_pb2 as pb, learner_pb2_grpc, rollout_pb2
from reward_mesh_learner.server import LearnerServicer, serve, trace_id_of


def header(**kw):
    base = dict(
        step=0,
        idempotency_key="raw",
        loss=pb.LearnerLossConfig(loss_type=pb.LEARNER_LOSS_TYPE_DAPO, eps_low=0.2, eps_high=0.28, max_completion_length=4),
        optim=pb.LearnerOptimConfig(lr=1e-3),
        sample_count=1,
    )
    base.update(kw)
    return pb.LearnerTrainStepRequest(header=pb.LearnerTrainStepHeader(**base))


def sample(c, sid="x", **kw):
    base = dict(
        sample_id=sid,
        group_id="g",
        context_key=c.context_key,
        prompt_token_ids=c.prompt_token_ids,
        token_ids=c.token_ids,
        rollout_logprobs=c.logprobs,
        advantage=1.0,
        policy_version=c.policy_version,
    )
    base.update(kw)
    return pb.LearnerTrainStepRequest(sample=pb.LearnerSample(**base))


class Server(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.learner = helpers.make_learner(seed=13)
        cls.server = serve(cls.learner, "127.0.0.1", 0)
        cls.channel = grpc.insecure_channel(cls.server.address)
        cls.stub = learner_pb2_grpc.LearnerStub(cls.channel)
        cls.tmp = tempfile.mkdtemp(prefix="torch-learner-srv-")

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.server.stop(1.0)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def invalid(self, fn, details):
        with self.assertRaises(grpc.RpcError) as cm:
            fn()
        err = cm.exception
        self.assertEqual(err.code(), grpc.StatusCode.INVALID_ARGUMENT, err.details())
        self.assertRegex(err.details(), details)
        self.assertRegex(err.details(), r"^'[^']+' ", "details parse as '<field>' <problem>")

    def completion(self):
        prompt = pb.LearnerPrompt(prompt_id="p", context_key="k", messages=[rollout_pb2.ChatMessage(role="user", content="hi")], max_tokens=4)
        return self.stub.Generate(pb.LearnerGenerateRequest(prompts=[prompt], n=2, seed=1, stop=["\n"])).completions[0]

    def test_info_and_health(self):
        info = self.stub.Info(pb.LearnerInfoRequest())
        self.assertEqual((info.name, info.kind, info.model, info.tokenizer), ("torch-learner", "torch", "builtin:tiny", "byte-level"))
        self.assertEqual((info.vocab_size, info.max_context, info.parameter_count, info.dtype, info.device), (259, 512, 149440, "float32", "cpu"))
        self.assertIn("not a pretrained LLM", info.description)
        health = health_pb2_grpc.HealthStub(self.channel)
        for service in ("", LEARNER_SERVICE_NAME):
            st = health.Check(health_pb2.HealthCheckRequest(service=service)).status
            self.assertEqual(st, health_pb2.HealthCheckResponse.SERVING)
        with self.assertRaises(grpc.RpcError) as cm:
            health.Check(health_pb2.HealthCheckRequest(service="nope"))
        self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)
        watch = health.Watch(health_pb2.HealthCheckRequest(service=""))
        self.assertEqual(next(watch).status, health_pb2.HealthCheckResponse.SERVING)
        watch.cancel()

    def test_generate_train_and_score(self):
        c = self.completion()
        self.assertEqual(c.prompt_token_ids[0], 256)
        self.assertIn(c.finish_reason, ("stop", "length"))
        self.assertEqual(len(c.logprobs), len(c.token_ids))
        self.assertTrue(c.HasField("matched_stop"))
        v0 = self.stub.Info(pb.LearnerInfoRequest()).policy_version
        res = self.stub.TrainStep(iter([header(idempotency_key="ok"), sample(c)]))
        self.assertEqual((res.policy_version, res.replayed, res.metrics["nSamples"]), (v0 + 1, False, 1.0))
        again = self.stub.TrainStep(iter([header(idempotency_key="ok"), sample(c)]))
        self.assertTrue(again.replayed)
        self.assertEqual(dict(again.metrics), dict(res.metrics))
        seq = pb.LearnerSequence(sequence_id="q", prompt_token_ids=c.prompt_token_ids, token_ids=c.token_ids)
        scored = self.stub.ComputeLogprobs(pb.LearnerComputeLogprobsRequest(sequences=[seq])).sequences
        self.assertEqual((scored[0].sequence_id, len(scored[0].logprobs)), ("q", len(c.token_ids)))
        self.assertEqual(self.stub.SyncWeights(pb.LearnerSyncWeightsRequest()).policy_version, v0 + 1)
        path = self.stub.SaveCheckpoint(pb.LearnerSaveCheckpointRequest(path=os.path.join(self.tmp, "ck"))).path
        self.assertTrue(os.path.isabs(path) and os.path.isfile(os.path.join(path, "learner.json")))

    def test_malformed_streams(self):
        c = self.completion()
        self.invalid(lambda: self.stub.TrainStep(iter([sample(c)])), r"^'header' must be the first message")
        self.invalid(lambda: self.stub.TrainStep(iter([header(sample_count=2), sample(c)])), r"^'samples' has 1 samples but header.sampleCount is 2")
        self.invalid(lambda: self.stub.TrainStep(iter([header(), sample(c), sample(c, "y")])), r"^'samples' has more than header.sampleCount = 1")
        self.invalid(lambda: self.stub.TrainStep(iter([header(), header()])), r"^'header' was sent twice")
        self.invalid(lambda: self.stub.TrainStep(iter([])), r"^'header' is missing")
        self.invalid(lambda: self.stub.TrainStep(iter([pb.LearnerTrainStepRequest()])), r"^'messages\[0\]' is empty")
        bad_loss = pb.LearnerLossConfig(loss_type=0, eps_low=0.2, eps_high=0.28)
        self.invalid(lambda: self.stub.TrainStep(iter([header(loss=bad_loss), sample(c)])), r"^'loss.lossType' is UNSPECIFIED")
        no_optim = pb.LearnerTrainStepRequest(header=pb.LearnerTrainStepHeader(idempotency_key="n", loss=bad_loss, sample_count=0))
        self.invalid(lambda: self.stub.TrainStep(iter([no_optim])), r"^'loss.lossType'")
        self.invalid(lambda: self.stub.TrainStep(iter([header(idempotency_key="nan"), sample(c, advantage=float("nan"))])), r"^'samples\[0\].advantage' is NaN, not a finite number \(sample 'x'\)$")
        self.invalid(lambda: self.stub.TrainStep(iter([header(idempotency_key="pt"), sample(c, prompt_token_ids=[])])), r"^'samples\[0\].promptTokenIds' is empty")
        frag = pb.LearnerPrompt(prompt_id="b", context_key="k", vocabulary=["a", "b"], max_tokens=1)
        self.invalid(lambda: self.stub.Generate(pb.LearnerGenerateRequest(prompts=[frag], n=1)), r"^'prompts\[0\].vocabulary' .*text policy")
        cont = pb.LearnerPrompt(prompt_id="c", text="x", prefix_token_ids=[1])
        self.invalid(lambda: self.stub.Generate(pb.LearnerGenerateRequest(prompts=[cont], n=1)), r"^'prompts\[0\].prefixTokenIds' .*text policy")


class _Context:
    """What the servicer reads of a grpc.ServicerContext: the call's metadata."""

    def __init__(self, metadata):
        self.metadata = metadata

    def invocation_metadata(self):
        return self.metadata


class MatchedStopOnTheWire(unittest.TestCase):
    """`LearnerCompletion.matched_stop` over real gRPC: the stop string, or "" — always set, so that a
    caller can tell "no stop string" from a learner that predates the field (unset)."""

    def generate(self, boosts, **req):
        server = serve(helpers.biased_learner(boosts), "127.0.0.1", 0)
        channel = grpc.insecure_channel(server.address)
        try:
            prompt = pb.LearnerPrompt(prompt_id="p", context_key="k", text="Q:", max_tokens=30)
            return learner_pb2_grpc.LearnerStub(channel).Generate(pb.LearnerGenerateRequest(prompts=[prompt], n=4, seed=2, **req)).completions
        finally:
            channel.close()
            server.stop(1.0)

    def test_stop_string_eos_and_length(self):
        a, b = ord("a"), ord("b")
        for c in self.generate({a: 40.0, b: 40.0, 257: -100.0}, stop=["b", "ab", "</tool_call>"]):
            self.assertTrue(c.HasField("matched_stop"))
            self.assertEqual(c.finish_reason, "stop")
            text = bytes(c.token_ids).decode()
            want = "ab" if text.endswith("ab") else "b"
            self.assertEqual((c.matched_stop, c.text + c.matched_stop), (want, text))
        for c in self.generate({257: 40.0}, stop=["b"]):
            self.assertEqual((c.finish_reason, c.HasField("matched_stop"), c.matched_stop), ("stop", True, ""))
        for c in self.generate({257: -100.0}, stop=["\x00never"]):
            self.assertEqual((c.finish_reason, c.HasField("matched_stop"), c.matched_stop), ("length", True, ""))


class TraceContext(unittest.TestCase):
    """The trainer's W3C traceparent (gRPC metadata): recorded per method, its trace id in failure logs."""

    TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"

    def test_trace_id_of(self):
        ok = _Context((("traceparent", f"00-{self.TRACE}-00f067aa0ba902b7-01"),))
        self.assertEqual(trace_id_of(ok), self.TRACE)
        for bad in ((), (("traceparent", "garbage"),), (("traceparent", f"00-{'0' * 32}-00f067aa0ba902b7-01"),)):
            self.assertIsNone(trace_id_of(_Context(bad)))

    def test_servicer_records_the_trace_of_each_call(self):
        servicer = LearnerServicer(helpers.make_learner(seed=3))
        servicer.Info(pb.LearnerInfoRequest(), _Context((("traceparent", f"00-{self.TRACE}-00f067aa0ba902b7-01"),)))
        self.assertEqual(servicer.last_trace_id, {"Info": self.TRACE})


class Cli(unittest.TestCase):
    ENV = dict(os.environ, PYTHONPATH=helpers.ROOT)

    def run_cli(self, *args, timeout=60):
        return subprocess.run([sys.executable, "-m", "reward_mesh_learner", *args], cwd=helpers.ROOT, env=self.ENV, capture_output=True, text=True, timeout=timeout)

    def test_bad_arguments_exit_2(self):
        r = self.run_cli("serve", "--model", "builtin:huge", "--port", "0")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("builtin:tiny", r.stderr)
        r = self.run_cli("serve", "--model", "/nonexistent/model")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--model", r.stderr)
        r = self.run_cli("serve", "--warmup-steps", "3")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--warmup-file", r.stderr)

    def test_serve_with_warmup_then_sigterm(self):
        tmp = tempfile.mkdtemp(prefix="torch-learner-cli-")
        try:
            data = os.path.join(tmp, "warm.jsonl")
            with open(data, "w", encoding="utf-8") as f:
                f.write(json.dumps({"prompt": "Q: 1+1=", "response": "2"}) + "\n")
                f.write(json.dumps({"messages": [{"role": "user", "content": "hi"}], "response": "hello"}) + "\n")
            args = ["serve", "--port", "0", "--threads", "1", "--warmup-file", data, "--warmup-steps", "10", "--warmup-batch", "2"]
            proc = subprocess.Popen([sys.executable, "-m", "reward_mesh_learner", *args], cwd=helpers.ROOT, env=self.ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                line = json.loads(proc.stdout.readline())
                self.assertEqual(line["event"], "listening")
                self.assertRegex(line["address"], r"^127\.0\.0\.1:\d+$")
                self.assertEqual((line["name"], line["policy_version"], line["vocab_size"]), ("torch-learner", 0, 259))
                self.assertIn("Warmed up", line["description"])
                with grpc.insecure_channel(line["address"]) as ch:
                    info = learner_pb2_grpc.LearnerStub(ch).Info(pb.LearnerInfoRequest(), timeout=10)
                    self.assertEqual(info.model, "builtin:tiny")
                proc.send_signal(signal.SIGTERM)
                self.assertEqual(proc.wait(timeout=20), 0)
                err = proc.stderr.read()
                self.assertEqual(len(re.findall(r"warm-up: step \d+/10", err)), 10, err)
            finally:
                if proc.poll() is None:
                    proc.kill()
                proc.stdout.close()
                proc.stderr.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
