/**
 * The chart's defaults: `helm lint` (and `--strict`), every rendered object valid against the Kubernetes
 * (and KEDA) schemas, every container hardened, every pod holding only its own NATS credentials, and the
 * NATS users' permissions exactly those of `@reward-mesh/sdk`'s nats-accounts.ts.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { SERVICES } from "@reward-mesh/cli";
import {
  adminPermissions,
  inboxPrefixOf,
  NATS_MAX_PAYLOAD,
  type NatsPermissions,
  servicePermissions,
  serviceUser,
  trainerPermissions,
} from "@reward-mesh/sdk";
import { parse as parseYaml } from "yaml";
import {
  type Any,
  chartDir,
  container,
  envVar,
  find,
  helm,
  type K8sObject,
  natsConf,
  natsUsers,
  parseManifests,
  podSpec,
  renderChart,
  repoRoot,
  trainerWorkload,
  workloads,
} from "./helm.js";
import { validateAll, validateObject } from "./validate.js";

const FULL = "rm-reward-mesh";
/**
 * The services the chart deploys by default: reward-model's manifest says `defaultEnabled: false`, and
 * code-exec and efficiency run untrusted code, so they wait for the user to choose their sandbox mode.
 */
const SERVICE_NAMES = ["length", "tool-call", "agentdojo", "ast", "math"];
/** The services whose block has `sandbox.enabled: true` (off by default in the chart). */
const SANDBOXED = ["code-exec", "efficiency"];
/** Values that turn the sandboxed services on (bwrap mode; the test renders for Kubernetes 1.33). */
const SANDBOXED_ON = { services: Object.fromEntries(SANDBOXED.map((n) => [n, { enabled: true }])) };

/** nats-accounts.ts's permissions in nats-server's form (as writeMeshAuth writes them). */
function asServerPermissions(p: NatsPermissions): unknown {
  return {
    publish: { allow: [...p.publish] },
    subscribe: { allow: [...p.subscribe] },
    ...(p.allowResponses ? { allow_responses: true } : {}),
  };
}

/** Asserts every pod and container of `objs` is hardened (the sandboxed services may only loosen seccomp). */
function assertHardened(objs: readonly K8sObject[]): void {
  const sandboxed = new Set(SANDBOXED.map((n) => `${FULL}-${n}`));
  for (const w of workloads(objs)) {
    const spec = podSpec(w);
    const where = `${w.kind}/${w.metadata.name}`;
    assert.equal(spec.automountServiceAccountToken, false, where);
    assert.equal(spec.securityContext.runAsNonRoot, true, where);
    assert.equal(spec.securityContext.runAsUser, 65532, where);
    assert.equal(spec.securityContext.seccompProfile.type, "RuntimeDefault", where);
    assert.equal(spec.hostNetwork ?? false, false, where);
    assert.equal(spec.hostPID ?? false, false, where);
    const tmp = spec.volumes.find((v: Any) => v.name === "tmp");
    assert.ok(tmp?.emptyDir, `${where}: /tmp emptyDir`);
    for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) {
      const sc = c.securityContext;
      const cw = `${where} container ${c.name}`;
      assert.equal(sc.runAsNonRoot, true, cw);
      assert.equal(sc.runAsUser, 65532, cw);
      assert.equal(sc.allowPrivilegeEscalation, false, cw);
      assert.equal(sc.readOnlyRootFilesystem, true, cw);
      assert.equal(sc.privileged, false, cw);
      assert.deepEqual(sc.capabilities, { drop: ["ALL"] }, cw);
      assert.ok(
        c.volumeMounts.some((m: Any) => m.name === "tmp" && m.mountPath === "/tmp"),
        cw,
      );
      // bwrap needs user namespaces: only the sandboxed services leave seccomp unconfined.
      assert.equal(
        sc.seccompProfile.type,
        sandboxed.has(w.metadata.name) ? "Unconfined" : "RuntimeDefault",
        cw,
      );
    }
  }
}

describe("helm lint", () => {
  it("passes", async () => {
    const r = await helm(["lint", chartDir]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
  });
  it("passes --strict", async () => {
    const r = await helm(["lint", "--strict", chartDir]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  });
  it("passes --strict with every optional part on", async () => {
    const r = await helm([
      "lint",
      "--strict",
      chartDir,
      "--set",
      "learner.enabled=true,keda.enabled=true,nats.replicas=3,grpc.tls.mtls.enabled=true,otel.endpoint=http://otel:4318",
    ]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
  });
});

describe("defaults", async () => {
  const objs = await renderChart();
  /** Every discovered service deployed, those off by default (`defaultEnabled: false`, sandboxed) too. */
  const every = await renderChart({
    services: Object.fromEntries(SERVICES.map((s) => [s.name, { enabled: true }])),
  });
  const sandboxedOn = await renderChart(SANDBOXED_ON);

  it("render with helm's own defaults: no values, no --kube-version (no pod user namespaces assumed)", async () => {
    const r = await helm(["template", "rm", chartDir]);
    assert.equal(r.code, 0, r.stderr);
    const plain = parseManifests(r.stdout);
    validateAll(plain);
    for (const w of workloads(plain)) assert.equal(podSpec(w).hostUsers, undefined, w.metadata.name);
    for (const name of SANDBOXED)
      assert.ok(!plain.some((o) => o.metadata.name === `${FULL}-${name}`), `${name} is off by default`);
  });

  it("render objects that validate against the Kubernetes OpenAPI schemas", () => {
    validateAll(objs);
    const kinds = new Set(objs.map((o) => o.kind));
    for (const k of [
      "StatefulSet",
      "Deployment",
      "Service",
      "Secret",
      "ConfigMap",
      "Job",
      "Pod",
      "NetworkPolicy",
    ])
      assert.ok(kinds.has(k), `no ${k}`);
  });

  it("the validator rejects a broken object (so the check above means something)", () => {
    const d = structuredClone(find(objs, "Deployment", `${FULL}-length`));
    d["spec"].template.spec.containers[0].ports[0].containerPort = "not-a-port";
    assert.throws(() => validateObject(d), /does not validate/);
  });

  it("leave reward-model (random test weights) off unless enabled, and deploy it when it is", async () => {
    assert.equal(
      objs.find((o) => o.metadata.name === `${FULL}-reward-model`),
      undefined,
      "no reward-model object by default",
    );
    const on = await renderChart({ services: { "reward-model": { enabled: true } } });
    assert.deepEqual(container(find(on, "Deployment", `${FULL}-reward-model`), "service").args, [
      "serve",
      "reward-model",
    ]);
  });

  it("deploy every service: Deployment, Service (gRPC + health port), PDB, CPU HPA", () => {
    for (const name of SERVICE_NAMES) {
      const d = find(objs, "Deployment", `${FULL}-${name}`);
      const c = container(d, "service");
      assert.deepEqual(c.args, ["serve", name]);
      const svc = find(objs, "Service", `${FULL}-${name}`);
      assert.deepEqual(
        svc["spec"].ports.map((p: Any) => p.name),
        ["grpc", "health"],
      );
      find(objs, "PodDisruptionBudget", `${FULL}-${name}`);
      const hpa = find(objs, "HorizontalPodAutoscaler", `${FULL}-${name}`);
      assert.equal(hpa["spec"].metrics[0].resource.name, "cpu");
      assert.equal(d["spec"].replicas, undefined, "the HPA owns replicas");
    }
  });

  it("services bind 0.0.0.0 with TLS and a token, and probe the plaintext health port with gRPC", () => {
    for (const entry of SERVICES) {
      const d = find(every, "Deployment", `${FULL}-${entry.name}`);
      const c = container(d, "service");
      const P = entry.envPrefix;
      assert.equal(envVar(c, `${P}_GRPC_HOST`)?.value, "0.0.0.0");
      assert.equal(envVar(c, `${P}_GRPC_PORT`)?.value, String(entry.defaultPort));
      const health = Number(envVar(c, `${P}_HEALTH_PORT`)?.value);
      assert.ok(health > 0 && health !== entry.defaultPort);
      assert.equal(envVar(c, `${P}_GRPC_TLS_CERT_FILE`)?.value, "/etc/reward-mesh/grpc-tls/tls.crt");
      assert.equal(envVar(c, `${P}_GRPC_TLS_KEY_FILE`)?.value, "/etc/reward-mesh/grpc-tls/tls.key");
      assert.equal(envVar(c, `${P}_GRPC_TOKEN_FILE`)?.value, "/etc/reward-mesh/grpc-token/token");
      assert.equal(envVar(c, `${P}_GRPC_INSECURE`), undefined);
      for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"])
        assert.deepEqual(c[probe].grpc, { port: health }, `${entry.name} ${probe}`);
    }
  });

  it("each service's values block matches its definition (port, env prefix, domains)", async () => {
    const values = parseYaml(readFileSync(`${chartDir}/values.yaml`, "utf8"));
    assert.deepEqual(Object.keys(values.services).sort(), SERVICES.map((s) => s.name).sort());
    for (const entry of SERVICES) {
      const v = values.services[entry.name];
      const def = await entry.load();
      await (def as { close?: () => Promise<void> }).close?.();
      assert.equal(v.port, entry.defaultPort, `${entry.name}.port`);
      assert.equal(
        v.enabled,
        entry.defaultEnabled && !SANDBOXED.includes(entry.name),
        `${entry.name}.enabled`,
      );
      assert.deepEqual(v.domains, [...def.domains], `${entry.name}.domains`);
      const c = container(find(every, "Deployment", `${FULL}-${entry.name}`), "service");
      assert.ok(envVar(c, `${entry.envPrefix}_GRPC_PORT`), `${entry.name}: prefix ${entry.envPrefix}`);
    }
  });

  it("set on each service only variables its loader reads (services/sdk/schema/service-env.schema.json)", () => {
    const schema = JSON.parse(
      readFileSync(`${repoRoot}/services/sdk/schema/service-env.schema.json`, "utf8"),
    );
    // The chart's own: pod identity, OpenTelemetry (the SDK's standard variables).
    const chartOwn = (_prefix: string, name: string) =>
      ["HOME", "POD_NAME", "POD_NAMESPACE"].includes(name) || name.startsWith("OTEL_");
    for (const entry of SERVICES) {
      const known = new Set(Object.keys(schema.definitions[entry.name].properties));
      const c = container(find(every, "Deployment", `${FULL}-${entry.name}`), "service");
      for (const e of c.env as Any[])
        assert.ok(
          known.has(e.name) || chartOwn(entry.envPrefix, e.name),
          `${entry.name}: ${e.name} is read by nothing`,
        );
    }
  });

  it("harden every container: non-root 65532, read-only root with a /tmp emptyDir, no capabilities, RuntimeDefault seccomp, no SA token", () => {
    assertHardened(objs);
  });

  it("stay hardened with every optional part on (sandboxed services, learner, KEDA, 3 NATS servers, mTLS, OTel, trainer Deployment)", async () => {
    assertHardened(
      await renderChart({
        ...SANDBOXED_ON,
        learner: { enabled: true, persistence: { enabled: true } },
        keda: { enabled: true },
        nats: { replicas: 3 },
        grpc: { tls: { mtls: { enabled: true } } },
        otel: { endpoint: "http://otel:4318" },
        trainer: { kind: "Deployment", persistence: { enabled: true } },
      }),
    );
  });

  it("give every pod only its own NATS user, password (from the Secret) and inbox prefix", () => {
    const expected: Record<string, string> = {
      [trainerWorkload(objs).metadata.name]: "trainer",
      [`${FULL}-provision-1`]: "admin",
      ...Object.fromEntries(SERVICE_NAMES.map((n) => [`${FULL}-${n}`, serviceUser(n)])),
    };
    const seen = new Set<string>();
    for (const w of workloads(objs)) {
      if (w.kind === "StatefulSet") continue; // the NATS server itself
      for (const c of podSpec(w).containers) {
        const user = envVar(c, "NATS_USER")?.value;
        const pw = envVar(c, "NATS_PASSWORD");
        if (!(w.metadata.name in expected)) {
          assert.equal(user, undefined, `${w.metadata.name} must hold no NATS credentials`);
          assert.equal(pw, undefined);
          continue;
        }
        const want = expected[w.metadata.name]!;
        assert.equal(user, want, w.metadata.name);
        assert.deepEqual(
          pw.valueFrom.secretKeyRef,
          { name: `${FULL}-nats-auth`, key: want },
          w.metadata.name,
        );
        assert.equal(envVar(c, "NATS_INBOX_PREFIX")?.value, inboxPrefixOf(want));
        assert.equal(envVar(c, "NATS_URL")?.value, `nats://${FULL}-nats.mesh.svc.cluster.local:4222`);
        // No other user's password anywhere in its environment.
        const keys = (c.env as Any[]).flatMap((e) =>
          e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef.key] : [],
        );
        assert.deepEqual(
          keys.filter((k) => k !== want && k !== "token"),
          [],
          w.metadata.name,
        );
        seen.add(want);
      }
    }
    assert.deepEqual([...seen].sort(), Object.values(expected).sort());
  });

  it("the admin user exists only in the provisioning Job", () => {
    const p = find(objs, "Job", `${FULL}-provision-1`);
    // A plain Job (a hook would run only after `helm install --wait` saw the services ready).
    assert.equal(p.metadata["annotations"]?.["helm.sh/hook"], undefined);
    assert.deepEqual(container(p, "provision").args, ["provision", "--timeout", "300"]);
    assert.equal(envVar(container(p, "provision"), "MESH_STREAM_REPLICAS")?.value, "1");
    for (const name of ["length", "tool-call"]) {
      const c = container(find(objs, "Deployment", `${FULL}-${name}`), "service");
      assert.equal(envVar(c, "MESH_STREAMS_WAIT_SECONDS")?.value, "600", `${name} waits for the streams`);
    }
    const trainer = container(trainerWorkload(objs), "trainer");
    assert.equal(envVar(trainer, "MESH_STREAMS_WAIT_SECONDS")?.value, "600");
    assert.equal(
      envVar(trainer, "REWARD_MESH_START_WAIT_SECONDS")?.value,
      "900",
      "waits for learner and consumers",
    );
  });

  it("the sandbox pods (bwrap mode) get exactly what rootless bubblewrap needs", () => {
    assertHardened(sandboxedOn);
    for (const name of SANDBOXED) {
      const d = find(sandboxedOn, "Deployment", `${FULL}-${name}`);
      const spec = d["spec"].template.spec;
      const c = container(d, "service");
      assert.equal(spec.hostUsers, false, `${name}: a pod user namespace`);
      assert.equal(c.securityContext.procMount, "Unmasked", name);
      assert.deepEqual(c.securityContext.seccompProfile, { type: "Unconfined" }, name);
      assert.deepEqual(c.securityContext.capabilities, { drop: ["ALL"] }, name);
      assert.equal(c.securityContext.runAsUser, 65532, name);
      assert.equal(c.securityContext.allowPrivilegeEscalation, false, name);
      assert.equal(envVar(c, "SANDBOX_BWRAP_MODE")?.value, "rootless", name);
    }
    const length = find(sandboxedOn, "Deployment", `${FULL}-length`)["spec"].template.spec;
    assert.equal(length.hostUsers, undefined, "other services are unchanged");
  });

  it("nats.conf: one user per role with exactly the sdk's permissions, passwords only by reference, no anonymous user", async () => {
    const conf = natsConf(every);
    const users = natsUsers(conf);
    const want: Record<string, unknown> = {
      admin: asServerPermissions(adminPermissions()),
      trainer: asServerPermissions(trainerPermissions()),
    };
    for (const entry of SERVICES) {
      const def = await entry.load();
      await (def as { close?: () => Promise<void> }).close?.();
      want[serviceUser(entry.name)] = asServerPermissions(
        servicePermissions({ name: entry.name, domains: def.domains }),
      );
    }
    assert.deepEqual([...users.keys()].sort(), Object.keys(want).sort());
    for (const [user, p] of Object.entries(want)) assert.deepEqual(users.get(user)!.permissions, p, user);
    assert.doesNotMatch(conf, /^\s*no_auth_user/m);
    assert.doesNotMatch(conf, /password: "/, "no literal password in the ConfigMap");
    assert.match(conf, /accounts \{\s*MESH \{\s*jetstream: enabled/);
    assert.match(conf, new RegExp(`^\\s*max_payload: ${NATS_MAX_PAYLOAD}$`, "m"));
    assert.match(conf, /^\s*http_port: 8222$/m);
    assert.doesNotMatch(conf, /cluster \{/);
    // The NATS container gets each referenced password from the Secret.
    const nats = container(find(every, "StatefulSet", `${FULL}-nats`), "nats");
    for (const [user, { passwordVar }] of users)
      assert.deepEqual(envVar(nats, `RAW_${passwordVar}`)?.valueFrom.secretKeyRef, {
        name: `${FULL}-nats-auth`,
        key: user,
      });
    // Quoted, so nats-server reads any password as a string (it parses a variable's value).
    for (const { passwordVar } of users.values())
      assert.equal(envVar(nats, passwordVar)?.value, `"$(RAW_${passwordVar})"`);
  });

  it("NATS: a StatefulSet running nats-server --config, JetStream on a PVC, monitoring 8222", () => {
    const sts = find(objs, "StatefulSet", `${FULL}-nats`);
    assert.equal(sts["spec"].replicas, 1);
    const c = container(sts, "nats");
    assert.deepEqual(c.command, ["nats-server", "--config", "/etc/nats/nats.conf"]);
    assert.equal(c.args, undefined);
    assert.ok(c.ports.some((p: Any) => p.containerPort === 8222));
    assert.equal(sts["spec"].volumeClaimTemplates[0].metadata.name, "data");
    assert.ok(c.volumeMounts.some((m: Any) => m.name === "data" && m.mountPath === "/data"));
  });

  it("generated Secrets: one password per user, a gRPC CA + certificate for every Service name, a token", () => {
    const auth = find(objs, "Secret", `${FULL}-nats-auth`);
    assert.deepEqual(
      Object.keys(auth["data"]).sort(),
      ["admin", "trainer", ...SERVICE_NAMES.map(serviceUser)].sort(),
    );
    for (const v of Object.values(auth["data"]) as string[])
      assert.match(Buffer.from(v, "base64").toString(), /^[A-Za-z0-9]{32}$/);
    const tls = find(objs, "Secret", `${FULL}-grpc-tls`);
    assert.equal(tls["type"], "kubernetes.io/tls");
    assert.deepEqual(Object.keys(tls["data"]).sort(), ["ca.crt", "tls.crt", "tls.key"]);
    const cert = Buffer.from(tls["data"]["tls.crt"], "base64").toString();
    {
      const x = new X509Certificate(cert);
      const ca = new X509Certificate(Buffer.from(tls["data"]["ca.crt"], "base64"));
      assert.ok(x.verify(ca.publicKey), "signed by the CA");
      for (const n of SERVICE_NAMES) {
        assert.ok(x.checkHost(`${FULL}-${n}`), `SAN ${FULL}-${n}`);
        assert.ok(x.checkHost(`${FULL}-${n}.mesh.svc.cluster.local`), `SAN ${n} FQDN`);
      }
      const token = Buffer.from(
        find(objs, "Secret", `${FULL}-grpc-token`)["data"]["token"],
        "base64",
      ).toString();
      assert.ok(token.length >= 16);
    }
  });

  it("NetworkPolicies: services egress only DNS + NATS, NATS ingress only from the release", () => {
    const svc = find(objs, "NetworkPolicy", `${FULL}-services`);
    assert.deepEqual(svc["spec"].policyTypes, ["Ingress", "Egress"]);
    const egressPorts = svc["spec"].egress.flatMap((r: Any) => r.ports.map((p: Any) => p.port));
    assert.deepEqual([...new Set(egressPorts)].sort(), [4222, 53]);
    for (const rule of svc["spec"].ingress as Any[])
      assert.deepEqual(rule.from, [
        {
          podSelector: {
            matchLabels: { "app.kubernetes.io/name": "reward-mesh", "app.kubernetes.io/instance": "rm" },
          },
        },
      ]);
    const nats = find(objs, "NetworkPolicy", `${FULL}-nats`);
    for (const rule of nats["spec"].ingress as Any[])
      assert.ok(rule.from?.[0]?.podSelector, "only pods of the release");
    const clients = find(objs, "NetworkPolicy", `${FULL}-clients`);
    assert.deepEqual(clients["spec"].ingress, []);
  });

  it("the helm test pod scores one rollout through length with the CA and token, no server key", () => {
    const pod = find(objs, "Pod", `${FULL}-test-score-length`);
    assert.equal(pod.metadata["annotations"]["helm.sh/hook"], "test");
    const c = container(pod, "score");
    assert.match(c.args[0], /reward-mesh score length --addr "\$SCORE_ADDR"/);
    assert.equal(envVar(c, "SCORE_ADDR")?.value, `${FULL}-length.mesh.svc.cluster.local:50061`);
    assert.equal(envVar(c, "REWARD_MESH_GRPC_TLS_CA_FILE")?.value, "/etc/reward-mesh/grpc-ca/ca.crt");
    assert.equal(envVar(c, "REWARD_MESH_GRPC_TOKEN_FILE")?.value, "/etc/reward-mesh/grpc-token/token");
    const ca = podSpec(pod).volumes.find((v: Any) => v.name === "grpc-ca");
    assert.deepEqual(ca.secret.items, [{ key: "ca.crt", path: "ca.crt" }]);
    assert.equal(envVar(c, "NATS_USER"), undefined);
  });

  it("the trainer runs `train --config` on its run config", () => {
    const job = trainerWorkload(objs);
    const c = container(job, "trainer");
    assert.deepEqual(c.args, ["train", "--config", "/etc/reward-mesh/run.yaml"]);
    const run = parseYaml(find(objs, "ConfigMap", `${FULL}-trainer`)["data"]["run.yaml"]);
    assert.equal(run.run.outputDir, "/var/lib/reward-mesh/runs");
    assert.equal(run.learner, undefined, "embedded learner without learner.enabled");
  });

  it("export no telemetry when otel.endpoint is empty", () => {
    for (const w of workloads(objs))
      for (const c of podSpec(w).containers)
        assert.equal(envVar(c, "OTEL_EXPORTER_OTLP_ENDPOINT"), undefined);
  });
});
