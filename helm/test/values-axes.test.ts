/**
 * One describe block per values axis: a service on/off (and a new one from one values block), 3-node
 * NATS, the GPU learner, KEDA, an existing (external) NATS, TLS from an existing Secret / mTLS / off,
 * OpenTelemetry, the sandbox modes, the trainer kind, and values the schema must reject.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { consumerName, discoverServices, servicePermissions, serviceUser } from "@reward-mesh/sdk";
import { parse as parseYaml } from "yaml";
import {
  type Any,
  chartDir,
  container,
  envVar,
  find,
  type K8sObject,
  natsConf,
  natsUsers,
  parseManifests,
  podSpec,
  renderChart,
  renderChartRaw,
  trainerWorkload,
  workloads,
} from "./helm.js";

import { validateAll } from "./validate.js";

const FULL = "rm-reward-mesh";

function has(objs: readonly K8sObject[], kind: string, name: string): boolean {
  return objs.some((o) => o.kind === kind && o.metadata.name === name);
}

describe("a service on/off", async () => {
  const off = await renderChart({ services: { agentdojo: { enabled: false } } });
  const added = await renderChart({
    services: {
      "my-judge": {
        enabled: true,
        port: 50090,
        healthPort: 50091,
        domains: ["custom", "code"],
        image: { repository: "example/my-judge", tag: "1.2.3" },
        env: { MY_JUDGE_CONCURRENCY: 4 },
      },
    },
  });

  it("a disabled service has no objects, no NATS user, no password, no certificate name", () => {
    validateAll(off);
    for (const kind of ["Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"])
      assert.ok(!has(off, kind, `${FULL}-agentdojo`), kind);
    assert.ok(!natsUsers(natsConf(off)).has(serviceUser("agentdojo")));
    assert.ok(!(serviceUser("agentdojo") in find(off, "Secret", `${FULL}-nats-auth`)["data"]));
    assert.ok(has(off, "Deployment", `${FULL}-length`));
  });

  it("a new service is one values block: Deployment, Service, NATS user with the sdk's permissions", () => {
    validateAll(added);
    const d = find(added, "Deployment", `${FULL}-my-judge`);
    const c = container(d, "service");
    assert.equal(c.image, "example/my-judge:1.2.3");
    assert.deepEqual(c.args, ["serve", "my-judge"]);
    assert.equal(envVar(c, "MY_JUDGE_GRPC_PORT")?.value, "50090");
    assert.equal(envVar(c, "MY_JUDGE_HEALTH_PORT")?.value, "50091");
    assert.equal(envVar(c, "MY_JUDGE_CONCURRENCY")?.value, "4");
    assert.equal(envVar(c, "NATS_USER")?.value, "service-my-judge");
    assert.deepEqual(c.readinessProbe.grpc, { port: 50091 });
    const user = natsUsers(natsConf(added)).get("service-my-judge");
    const p = servicePermissions({ name: "my-judge", domains: ["custom", "code"] });
    assert.deepEqual(user?.permissions, {
      publish: { allow: p.publish },
      subscribe: { allow: p.subscribe },
      allow_responses: true,
    });
    const np = find(added, "NetworkPolicy", `${FULL}-services`);
    assert.ok(np["spec"].ingress.some((r: Any) => r.ports.some((x: Any) => x.port === 50090)));
  });
});

describe("3-node NATS", async () => {
  const objs = await renderChart({ nats: { replicas: 3 } });

  it("a 3-replica StatefulSet with cluster routes to every server through the headless Service", () => {
    validateAll(objs);
    const sts = find(objs, "StatefulSet", `${FULL}-nats`);
    assert.equal(sts["spec"].replicas, 3);
    assert.equal(sts["spec"].serviceName, `${FULL}-nats-headless`);
    assert.equal(find(objs, "Service", `${FULL}-nats-headless`)["spec"].clusterIP, "None");
    const conf = natsConf(objs);
    assert.match(conf, /cluster \{/);
    for (const i of [0, 1, 2])
      assert.ok(
        conf.includes(`"nats://${FULL}-nats-${i}.${FULL}-nats-headless.mesh.svc.cluster.local:6222"`),
        `route ${i}`,
      );
    assert.match(conf, /server_name: \$POD_NAME/);
    find(objs, "PodDisruptionBudget", `${FULL}-nats`);
  });

  it("streams get 3 replicas (MESH_STREAM_REPLICAS of the provisioning Job and every client)", () => {
    for (const w of workloads(objs))
      for (const c of podSpec(w).containers) {
        const v = envVar(c, "MESH_STREAM_REPLICAS");
        if (v !== undefined) assert.equal(v.value, "3", w.metadata.name);
      }
    assert.equal(
      envVar(container(find(objs, "Job", `${FULL}-provision-1`), "provision"), "MESH_STREAM_REPLICAS")?.value,
      "3",
    );
  });
});

describe("GPU learner", async () => {
  const on = await renderChart({
    learner: { enabled: true, nodeSelector: { "nvidia.com/gpu.present": "true" }, gpu: { count: 2 } },
  });
  const cpu = await renderChart({ learner: { enabled: true, gpu: { enabled: false }, device: "cpu" } });
  const off = await renderChart();

  it("on: a Deployment on GPU nodes with the GPU limit, TLS + token, gRPC probes on its health port", () => {
    validateAll(on);
    const d = find(on, "Deployment", `${FULL}-learner`);
    const c = container(d, "learner");
    assert.equal(c.image, "reward-mesh/learner:0.1.0");
    assert.deepEqual(c.args.slice(0, 7), [
      "serve",
      "--host",
      "0.0.0.0",
      "--port",
      "50051",
      "--health-port",
      "50052",
    ]);
    assert.equal(c.resources.limits["nvidia.com/gpu"], 2);
    assert.deepEqual(podSpec(d).nodeSelector, { "nvidia.com/gpu.present": "true" });
    assert.ok(podSpec(d).tolerations.some((t: Any) => t.key === "nvidia.com/gpu"));
    assert.equal(envVar(c, "LEARNER_GRPC_TLS_CERT_FILE")?.value, "/etc/reward-mesh/grpc-tls/tls.crt");
    assert.equal(envVar(c, "LEARNER_GRPC_TOKEN_FILE")?.value, "/etc/reward-mesh/grpc-token/token");
    assert.deepEqual(c.livenessProbe.grpc, { port: 50052 });
    assert.equal(envVar(c, "NATS_PASSWORD"), undefined, "the learner does not talk to NATS");
    find(on, "Service", `${FULL}-learner`);
  });

  it("on: the trainer dials it over TLS with the CA and token, and may reach only its gRPC port besides NATS", () => {
    const run = parseYaml(find(on, "ConfigMap", `${FULL}-trainer`)["data"]["run.yaml"]);
    assert.deepEqual(run.learner, { kind: "grpc", address: `${FULL}-learner:50051` });
    const c = container(trainerWorkload(on), "trainer");
    assert.equal(envVar(c, "REWARD_MESH_GRPC_TLS_CA_FILE")?.value, "/etc/reward-mesh/grpc-ca/ca.crt");
    assert.equal(envVar(c, "REWARD_MESH_GRPC_TOKEN_FILE")?.value, "/etc/reward-mesh/grpc-token/token");
    const np = find(on, "NetworkPolicy", `${FULL}-clients`);
    const ports = np["spec"].egress.flatMap((r: Any) => r.ports.map((p: Any) => p.port));
    assert.deepEqual([...new Set(ports)].sort(), [4222, 50051, 53]);
    find(on, "NetworkPolicy", `${FULL}-learner`);
    const tls = find(on, "Secret", `${FULL}-grpc-tls`);
    assert.ok(tls, "certificate re-rendered with the learner's names");
  });

  it("gpu.enabled=false: no GPU limit", () => {
    const c = container(find(cpu, "Deployment", `${FULL}-learner`), "learner");
    assert.equal(c.resources.limits["nvidia.com/gpu"], undefined);
  });

  it("off: no learner objects and the run config keeps its own learner", () => {
    assert.ok(!off.some((o) => o.metadata.name.startsWith(`${FULL}-learner`)));
    const run = parseYaml(find(off, "ConfigMap", `${FULL}-trainer`)["data"]["run.yaml"]);
    assert.equal(run.learner, undefined);
  });
});

describe("KEDA", async () => {
  const on = await renderChart({ keda: { enabled: true } });
  const off = await renderChart();

  it("on: one ScaledObject per service, a nats-jetstream trigger per domain on its durable consumer, no HPA", () => {
    validateAll(on);
    const so = find(on, "ScaledObject", `${FULL}-length`);
    assert.equal(so.apiVersion, "keda.sh/v1alpha1");
    assert.equal(so["spec"].scaleTargetRef.name, `${FULL}-length`);
    const triggers = so["spec"].triggers;
    assert.deepEqual(
      triggers.map((t: Any) => t.metadata.consumer),
      ["code", "tool_call", "agent", "custom"].map((d) => consumerName("length", d)),
    );
    for (const t of triggers) {
      assert.equal(t.type, "nats-jetstream");
      assert.equal(t.metadata.account, "MESH");
      assert.equal(t.metadata.stream, "MESH_ROLLOUTS");
      assert.equal(t.metadata.natsServerMonitoringEndpoint, `${FULL}-nats.mesh.svc.cluster.local:8222`);
    }
    assert.ok(!on.some((o) => o.kind === "HorizontalPodAutoscaler"));
    assert.equal(find(on, "Deployment", `${FULL}-length`)["spec"].replicas, undefined);
    const np = find(on, "NetworkPolicy", `${FULL}-nats`);
    assert.ok(
      np["spec"].ingress.some(
        (r: Any) => r.from?.[0]?.namespaceSelector?.matchLabels?.["kubernetes.io/metadata.name"] === "keda",
      ),
    );
  });

  it("off: no ScaledObject", () => {
    assert.ok(!off.some((o) => o.kind === "ScaledObject"));
  });
});

describe("existing NATS", async () => {
  const objs = await renderChart({
    nats: {
      enabled: false,
      external: {
        url: "tls://nats.example:4222",
        existingSecret: "mesh-nats-users",
        caSecret: "mesh-nats-ca",
        streamReplicas: 3,
      },
    },
  });

  it("no NATS StatefulSet, config, password Secret or policy", () => {
    validateAll(objs);
    assert.ok(!objs.some((o) => o.kind === "StatefulSet"));
    assert.ok(!has(objs, "ConfigMap", `${FULL}-nats-config`));
    assert.ok(!has(objs, "Secret", `${FULL}-nats-auth`));
    assert.ok(!has(objs, "NetworkPolicy", `${FULL}-nats`));
  });

  it("every client gets the URL, its own password from the existing Secret, and the CA", () => {
    let n = 0;
    for (const w of workloads(objs))
      for (const c of podSpec(w).containers) {
        const user = envVar(c, "NATS_USER")?.value;
        if (user === undefined) continue;
        n++;
        assert.equal(envVar(c, "NATS_URL")?.value, "tls://nats.example:4222");
        assert.deepEqual(envVar(c, "NATS_PASSWORD").valueFrom.secretKeyRef, {
          name: "mesh-nats-users",
          key: user,
        });
        assert.equal(envVar(c, "NATS_TLS_CA_FILE")?.value, "/etc/reward-mesh/nats-ca/ca.crt");
        assert.equal(envVar(c, "MESH_STREAM_REPLICAS")?.value, "3");
        assert.ok(podSpec(w).volumes.some((v: Any) => v.secret?.secretName === "mesh-nats-ca"));
      }
    const values = parseYaml(readFileSync(join(chartDir, "values.yaml"), "utf8"));
    const byDefault = Object.values(values.services as Record<string, { enabled: boolean }>).filter(
      (s) => s.enabled,
    ).length;
    assert.equal(n, byDefault + 2, `${byDefault} services enabled by default, the trainer, provisioning`);
  });

  it("KEDA scales on the external NATS's monitoring endpoint, which it requires", async () => {
    const external = {
      url: "tls://nats.example:4222",
      existingSecret: "mesh-nats-users",
      monitoringEndpoint: "nats-mon.example:8222",
    };
    const keda = await renderChart({ keda: { enabled: true }, nats: { enabled: false, external } });
    validateAll(keda);
    const so = find(keda, "ScaledObject", `${FULL}-length`);
    for (const t of so["spec"].triggers)
      assert.equal(t.metadata.natsServerMonitoringEndpoint, "nats-mon.example:8222");
    const missing = await renderChartRaw({
      keda: { enabled: true },
      nats: { enabled: false, external: { ...external, monitoringEndpoint: "" } },
    });
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /needs nats\.external\.monitoringEndpoint/);
  });

  it("the schema requires the URL and the Secret", async () => {
    const r = await renderChartRaw({ nats: { enabled: false } });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /nats\.external\.url/);
    assert.match(r.stderr, /nats\.external\.existingSecret/);
  });
});

describe("gRPC TLS", async () => {
  const existing = await renderChart({ grpc: { tls: { existingSecret: "mesh-grpc-cert" } } });
  const mtls = await renderChart({ grpc: { tls: { mtls: { enabled: true } } }, learner: { enabled: true } });
  const plain = await renderChart({ grpc: { tls: { enabled: false }, token: { enabled: false } } });

  it("from an existing Secret (cert-manager keys): nothing generated, every server mounts it", () => {
    validateAll(existing);
    assert.ok(!has(existing, "Secret", `${FULL}-grpc-tls`));
    assert.ok(!has(existing, "Secret", `${FULL}-grpc-ca`));
    const spec = podSpec(find(existing, "Deployment", `${FULL}-length`));
    const v = spec.volumes.find((x: Any) => x.name === "grpc-tls");
    assert.equal(v.secret.secretName, "mesh-grpc-cert");
    assert.deepEqual(
      v.secret.items.map((i: Any) => i.key),
      ["tls.crt", "tls.key", "ca.crt"],
    );
    const test = podSpec(find(existing, "Pod", `${FULL}-test-score-length`));
    assert.equal(test.volumes.find((x: Any) => x.name === "grpc-ca").secret.secretName, "mesh-grpc-cert");
  });

  it("mTLS: servers require client certificates, clients present the generated one", () => {
    validateAll(mtls);
    const c = container(find(mtls, "Deployment", `${FULL}-length`), "service");
    assert.equal(envVar(c, "LENGTH_GRPC_TLS_CLIENT_CA_FILE")?.value, "/etc/reward-mesh/grpc-tls/ca.crt");
    const client = find(mtls, "Secret", `${FULL}-grpc-client-tls`);
    assert.deepEqual(Object.keys(client["data"]).sort(), ["ca.crt", "tls.crt", "tls.key"]);
    for (const [workload, cname] of [
      [trainerWorkload(mtls), "trainer"],
      [find(mtls, "Pod", `${FULL}-test-score-length`), "score"],
    ] as const) {
      const cc = container(workload, cname);
      assert.equal(
        envVar(cc, "REWARD_MESH_GRPC_TLS_CLIENT_CERT_FILE")?.value,
        "/etc/reward-mesh/grpc-client-tls/tls.crt",
      );
      assert.equal(
        envVar(cc, "REWARD_MESH_GRPC_TLS_CLIENT_KEY_FILE")?.value,
        "/etc/reward-mesh/grpc-client-tls/tls.key",
      );
    }
  });

  it("mTLS with an existing server Secret needs an existing client Secret", async () => {
    const r = await renderChartRaw({ grpc: { tls: { existingSecret: "x", mtls: { enabled: true } } } });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /grpc\.tls\.mtls\.existingClientSecret is required/);
  });

  it("off: plaintext explicitly allowed on both sides, no token, no certificates", () => {
    validateAll(plain);
    const c = container(find(plain, "Deployment", `${FULL}-length`), "service");
    assert.equal(envVar(c, "LENGTH_GRPC_INSECURE")?.value, "1");
    assert.equal(envVar(c, "LENGTH_GRPC_TLS_CERT_FILE"), undefined);
    assert.equal(envVar(c, "LENGTH_GRPC_TOKEN_FILE"), undefined);
    const t = container(find(plain, "Pod", `${FULL}-test-score-length`), "score");
    assert.equal(envVar(t, "REWARD_MESH_GRPC_INSECURE")?.value, "1");
    assert.ok(!plain.some((o) => o.kind === "Secret" && o.metadata.name.includes("grpc")));
  });
});

describe("OpenTelemetry", async () => {
  const objs = await renderChart({
    otel: { endpoint: "http://otel-collector:4318", resourceAttributes: { team: "rl" } },
  });
  it("every mesh container exports OTLP with its service name and pod/namespace attributes", () => {
    const c = container(find(objs, "Deployment", `${FULL}-tool-call`), "service");
    assert.equal(envVar(c, "OTEL_EXPORTER_OTLP_ENDPOINT")?.value, "http://otel-collector:4318");
    assert.equal(envVar(c, "OTEL_TRACES_EXPORTER")?.value, "otlp");
    assert.equal(envVar(c, "OTEL_SERVICE_NAME")?.value, "tool-call");
    assert.equal(
      envVar(c, "OTEL_RESOURCE_ATTRIBUTES")?.value,
      "k8s.pod.name=$(POD_NAME),k8s.namespace.name=$(POD_NAMESPACE),service.namespace=rm,team=rl",
    );
    const names = c.env.map((e: Any) => e.name);
    assert.ok(names.indexOf("POD_NAME") < names.indexOf("OTEL_RESOURCE_ATTRIBUTES"), "defined before use");
    assert.equal(envVar(c, "POD_NAME").valueFrom.fieldRef.fieldPath, "metadata.name");
  });

  it("the NetworkPolicies let services and the trainer reach the collector's port, and only that", async () => {
    validateAll(objs);
    const otelRule = (np: Any) =>
      np["spec"].egress.find((r: Any) => r.ports?.some((p: Any) => p.port === 4318));
    for (const name of [`${FULL}-services`, `${FULL}-clients`]) {
      const rule = otelRule(find(objs, "NetworkPolicy", name));
      assert.ok(rule, `${name} allows the collector`);
      assert.equal(rule.to, undefined, "any destination on that port (no peers given)");
    }
    const none = await renderChart({});
    for (const np of none.filter((o) => o.kind === "NetworkPolicy"))
      assert.equal(otelRule(np), undefined, `${np.metadata.name}: no telemetry rule without an endpoint`);
    const peers = [
      { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "observability" } } },
    ];
    const scoped = await renderChart({
      otel: { endpoint: "https://otel.example", networkPolicyPeers: peers },
    });
    const rule = find(scoped, "NetworkPolicy", `${FULL}-services`)["spec"].egress.find((r: Any) =>
      r.ports?.some((p: Any) => p.port === 443),
    );
    assert.deepEqual(rule?.to, peers, "https without a port: 443, to the given peers");
  });
});

/** Values that turn the services that run untrusted code on (off by default), in `mode`. */
function sandboxedOn(mode?: "bwrap" | "runtimeClass", extra: Record<string, unknown> = {}): Any {
  const sandbox = mode === undefined ? {} : { sandbox: { mode } };
  return {
    services: {
      "code-exec": { enabled: true, ...sandbox, ...extra },
      efficiency: { enabled: true, ...sandbox },
    },
  };
}

describe("sandbox modes need pod user namespaces for bwrap", async () => {
  it("the defaults run no untrusted code, so they render on Kubernetes 1.30 without user namespaces", async () => {
    const objs = await renderChart({}, { kubeVersion: "1.30.0" });
    validateAll(objs);
    assert.ok(!has(objs, "Deployment", `${FULL}-code-exec`));
    assert.ok(!has(objs, "Deployment", `${FULL}-efficiency`));
    assert.ok(!workloads(objs).some((w) => podSpec(w).hostUsers === false));
  });
  it("turning code-exec on in bwrap mode on Kubernetes < 1.33 without podUserNamespaces: refused, naming what to set", async () => {
    const r = await renderChartRaw(sandboxedOn(), { kubeVersion: "1.30.0" });
    assert.notEqual(r.code, 0);
    assert.match(
      r.stderr,
      /services\.code-exec\.sandbox\.mode=bwrap needs pod user namespaces .*podUserNamespaces=true.*services\.code-exec\.sandbox\.mode=runtimeClass.*services\.code-exec\.sandbox\.runtimeClassName.*services\.code-exec\.enabled=false/,
    );
  });
  it("with podUserNamespaces, or in runtimeClass mode, 1.30 renders", async () => {
    validateAll(await renderChart({ ...sandboxedOn(), podUserNamespaces: true }, { kubeVersion: "1.30.0" }));
    const gv = await renderChart(sandboxedOn("runtimeClass"), { kubeVersion: "1.30.0" });
    assert.ok(has(gv, "Deployment", `${FULL}-code-exec`));
    assert.ok(!gv.some((o) => o["spec"]?.template?.spec?.hostUsers === false));
  });
});

describe("sandbox modes", async () => {
  const bwrap = await renderChart(
    sandboxedOn(undefined, { sandbox: { seccompLocalhostProfile: "profiles/bwrap.json" } }),
  );
  const gvisor = await renderChart(sandboxedOn("runtimeClass"));

  it("bwrap: the default needs seccomp Unconfined + AppArmor unconfined, and nothing else", () => {
    const d = find(bwrap, "Deployment", `${FULL}-efficiency`);
    const c = container(d, "service");
    assert.deepEqual(c.securityContext.seccompProfile, { type: "Unconfined" });
    assert.equal(
      d["spec"].template.metadata.annotations["container.apparmor.security.beta.kubernetes.io/service"],
      "unconfined",
    );
    assert.equal(envVar(c, "SANDBOX_BACKEND")?.value, "bwrap");
    assert.equal(c.securityContext.privileged, false);
    assert.deepEqual(c.securityContext.capabilities, { drop: ["ALL"] });
  });

  it("bwrap with a Localhost seccomp profile", () => {
    const c = container(find(bwrap, "Deployment", `${FULL}-code-exec`), "service");
    assert.deepEqual(c.securityContext.seccompProfile, {
      type: "Localhost",
      localhostProfile: "profiles/bwrap.json",
    });
  });

  it("services.<name>.env overrides the sandbox backend (e.g. docker) without a duplicate variable", async () => {
    const objs = await renderChart({
      services: {
        "code-exec": {
          enabled: true,
          env: { SANDBOX_BACKEND: "docker", SANDBOX_DOCKER_HOST: "tcp://dind:2376" },
        },
      },
    });
    const c = container(find(objs, "Deployment", `${FULL}-code-exec`), "service");
    assert.deepEqual(
      c.env.filter((e: Any) => e.name === "SANDBOX_BACKEND").map((e: Any) => e.value),
      ["docker"],
    );
  });

  it("runtimeClass: a gVisor pod keeps RuntimeDefault and no AppArmor override", () => {
    validateAll(gvisor);
    const d = find(gvisor, "Deployment", `${FULL}-code-exec`);
    assert.equal(podSpec(d).runtimeClassName, "gvisor");
    assert.deepEqual(container(d, "service").securityContext.seccompProfile, { type: "RuntimeDefault" });
    assert.equal(
      d["spec"].template.metadata.annotations?.["container.apparmor.security.beta.kubernetes.io/service"],
      undefined,
    );
    assert.equal(podSpec(find(gvisor, "Deployment", `${FULL}-length`)).runtimeClassName, undefined);
  });
});

describe("trainer kind", async () => {
  const dep = await renderChart({ trainer: { kind: "Deployment" } });
  const off = await renderChart({ trainer: { enabled: false } });
  it("Deployment: one replica, Recreate", () => {
    validateAll(dep);
    const d = find(dep, "Deployment", `${FULL}-trainer`);
    assert.equal(d["spec"].replicas, 1);
    assert.equal(d["spec"].strategy.type, "Recreate");
    assert.ok(!dep.some((o) => o.kind === "Job" && o.metadata.name.startsWith(`${FULL}-trainer`)));
  });
  it("disabled: no trainer objects (its NATS user stays for an out-of-cluster trainer)", () => {
    assert.ok(!off.some((o) => o.metadata.name.startsWith(`${FULL}-trainer`)));
    assert.ok(natsUsers(natsConf(off)).has("trainer"));
  });
});

describe("NATS passwords from an existing Secret", async () => {
  const objs = await renderChart({ nats: { auth: { existingSecret: "my-nats-users" } } });
  it("nothing generated; the server and every client read the existing Secret", () => {
    assert.ok(!has(objs, "Secret", `${FULL}-nats-auth`));
    const nats = container(find(objs, "StatefulSet", `${FULL}-nats`), "nats");
    assert.equal(envVar(nats, "RAW_NATS_PASSWORD_TRAINER").valueFrom.secretKeyRef.name, "my-nats-users");
    const c = container(find(objs, "Deployment", `${FULL}-ast`), "service");
    assert.deepEqual(envVar(c, "NATS_PASSWORD").valueFrom.secretKeyRef, {
      name: "my-nats-users",
      key: "service-ast",
    });
  });
});

describe("a service's domains are what it consumes", () => {
  const services = discoverServices();

  it("a known service's domains must be its manifest's (in any order); others are refused, naming both", async () => {
    const r = await renderChartRaw({ services: { length: { domains: ["code"] } } });
    assert.notEqual(r.code, 0);
    assert.match(
      r.stderr,
      /services\.length\.domains \(code\) differ from what length consumes \(code, tool_call, agent, custom, its manifest's domains.*Leave services\.length\.domains at the default \[code, tool_call, agent, custom\]/,
    );
    validateAll(
      await renderChart({ services: { length: { domains: ["custom", "agent", "tool_call", "code"] } } }),
    );
  });

  it("every discovered service is held to its manifest (templates/_manifests.tpl knows them all)", async () => {
    for (const s of services) {
      const domainsEnv = s.manifest.domainsEnv;
      const r = await renderChartRaw({
        services: { [s.manifest.name]: { enabled: true, domains: ["not_consumed"] } },
        podUserNamespaces: true,
      });
      if (domainsEnv === undefined) {
        assert.notEqual(r.code, 0, `${s.manifest.name} rendered with a domain it does not consume`);
        assert.match(r.stderr, new RegExp(`services\\.${s.manifest.name}\\.domains \\(not_consumed\\) differ`));
      } else {
        // A domains variable: the service consumes what the chart passes in it.
        assert.equal(r.code, 0, r.stderr);
        const c = container(find(parseManifests(r.stdout), "Deployment", `${FULL}-${s.manifest.name}`), "service");
        assert.equal(envVar(c, domainsEnv)?.value, "not_consumed", `${s.manifest.name}: ${domainsEnv}`);
      }
    }
  });

  it("reward-model (REWARD_MODEL_DOMAINS): the chart passes its domains; an env entry that differs is refused", async () => {
    const on = { enabled: true, domains: ["math", "custom"] };
    const objs = await renderChart({ services: { "reward-model": on } });
    validateAll(objs);
    const c = container(find(objs, "Deployment", `${FULL}-reward-model`), "service");
    assert.deepEqual(
      c.env.filter((e: Any) => e.name === "REWARD_MODEL_DOMAINS").map((e: Any) => e.value),
      ["math,custom"],
    );
    const user = natsUsers(natsConf(objs)).get(serviceUser("reward-model"));
    assert.deepEqual(
      user?.permissions,
      (() => {
        const p = servicePermissions({ name: "reward-model", domains: ["math", "custom"] });
        return { publish: { allow: p.publish }, subscribe: { allow: p.subscribe }, allow_responses: true };
      })(),
    );
    const same = await renderChart({
      services: { "reward-model": { ...on, env: { REWARD_MODEL_DOMAINS: "custom, math" } } },
    });
    const sc = container(find(same, "Deployment", `${FULL}-reward-model`), "service");
    assert.deepEqual(
      sc.env.filter((e: Any) => e.name === "REWARD_MODEL_DOMAINS").map((e: Any) => e.value),
      ["custom, math"],
      "an equal env entry is kept, not doubled",
    );
    const r = await renderChartRaw({
      services: { "reward-model": { enabled: true, env: { REWARD_MODEL_DOMAINS: "math" } } },
    });
    assert.notEqual(r.code, 0);
    assert.match(
      r.stderr,
      /services\.reward-model\.env\.REWARD_MODEL_DOMAINS \(math\) and services\.reward-model\.domains \(custom, code, tool_call, agent\) differ.*Set only services\.reward-model\.domains/,
    );
  });

  it("a service the chart does not know (its own image) is taken at its word", async () => {
    const objs = await renderChart({
      services: {
        "my-judge": { enabled: true, port: 50090, healthPort: 50091, domains: ["anything"] },
      },
    });
    assert.ok(natsUsers(natsConf(objs)).has(serviceUser("my-judge")));
  });
});

describe("guards", () => {
  it("a health port equal to the gRPC port is refused", async () => {
    const r = await renderChartRaw({ services: { length: { healthPort: 50061 } } });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /services\.length: healthPort must differ from port/);
  });
  it("Kubernetes older than 1.27 (no GA gRPC probes) is refused", async () => {
    const r = await renderChartRaw({}, { args: ["--kube-version", "1.26.0"] });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /requires kubeVersion: >=1\.27\.0-0/);
  });
});

describe("the schema rejects", () => {
  const cases: [string, unknown, RegExp][] = [
    [
      "a 2-server NATS",
      { nats: { replicas: 2 } },
      /nats\.replicas: nats\.replicas must be one of the following: 1, 3/,
    ],
    ["an unknown top-level key", { natz: { enabled: true } }, /Additional property natz is not allowed/],
    ["a typo in a main block", { nats: { replica: 3 } }, /nats: Additional property replica is not allowed/],
    [
      "a typo in a service block",
      { services: { length: { prot: 1 } } },
      /services\.length: Additional property prot is not allowed/,
    ],
    [
      "an unknown sandbox mode",
      { services: { "code-exec": { sandbox: { mode: "docker" } } } },
      /sandbox\.mode/,
    ],
    ["a bad trainer kind", { trainer: { kind: "CronJob" } }, /trainer\.kind/],
    [
      "a service name that is no subject token",
      { services: { "Bad.Name": { enabled: true, port: 1, healthPort: 2, domains: ["x"] } } },
      /services/,
    ],
    ["a port out of range", { services: { length: { port: 70000 } } }, /services\.length\.port/],
    // trainer.config is checked against the trainer's run-config schema (embedded as definitions.runConfig).
    [
      "a run-config key the trainer does not know",
      { trainer: { config: { stepz: 3 } } },
      /trainer\.config: Additional property stepz is not allowed/,
    ],
    [
      "a run-config value of the wrong type",
      { trainer: { config: { groupSize: "eight" } } },
      /trainer\.config\.groupSize: Invalid type\. Expected: integer, given: string/,
    ],
    [
      "an unknown component preset",
      { trainer: { config: { components: ["corrgrpo"] } } },
      /trainer\.config\.components\.0: trainer\.config\.components\.0 must be one of the following: "corrgrpo-code"/,
    ],
    [
      "a typo in a nested run-config block",
      { trainer: { config: { run: { outputdir: "/x" } } } },
      /trainer\.config\.run: Additional property outputdir is not allowed/,
    ],
  ];
  for (const [what, values, message] of cases)
    it(what, async () => {
      const r = await renderChartRaw(values);
      assert.notEqual(r.code, 0, `${what} rendered`);
      assert.match(r.stderr, /values don't meet the specifications of the schema/);
      assert.match(r.stderr, message);
    });
});
