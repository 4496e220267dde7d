/**
 * `services.<name>.httpPort`: the service's HTTP/JSON (Connect) port — `<PREFIX>_HTTP_PORT`, a container port and a
 * Service port named `http`, the NetworkPolicy opening it to the release's pods — only when set; a port equal to
 * the gRPC or health port is refused.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Any, find, renderChart, renderChartRaw } from "./helm.js";
import { validateAll } from "./validate.js";

const FULL = "rm-reward-mesh";

describe("chart: a service's HTTP/JSON port", () => {
  it("is off by default: no env, no container or Service port", async () => {
    const objs = await renderChart();
    const svc = find(objs, "Service", `${FULL}-length`) as Any;
    assert.deepEqual(
      svc.spec.ports.map((p: Any) => p.name),
      ["grpc", "health"],
    );
    const c = (find(objs, "Deployment", `${FULL}-length`) as Any).spec.template.spec.containers[0];
    assert.equal(
      c.env.find((e: Any) => e.name === "LENGTH_HTTP_PORT"),
      undefined,
    );
  });

  it("httpPort sets <PREFIX>_HTTP_PORT, a container port, a Service port and the NetworkPolicy port", async () => {
    const objs = await renderChart({ services: { length: { httpPort: 8061 } } });
    validateAll(objs);
    const svc = find(objs, "Service", `${FULL}-length`) as Any;
    // TLS is on by default: the port serves HTTPS (h2 and HTTP/1.1).
    assert.deepEqual(svc.spec.ports[2], {
      name: "http",
      port: 8061,
      targetPort: "http",
      appProtocol: "https",
    });
    const c = (find(objs, "Deployment", `${FULL}-length`) as Any).spec.template.spec.containers[0];
    assert.deepEqual(
      c.env.find((e: Any) => e.name === "LENGTH_HTTP_PORT"),
      { name: "LENGTH_HTTP_PORT", value: "8061" },
    );
    assert.ok(c.ports.some((p: Any) => p.name === "http" && p.containerPort === 8061));
    const np = find(objs, "NetworkPolicy", `${FULL}-services`) as Any;
    const ports = np.spec.ingress.flatMap((i: Any) => (i.ports ?? []).map((p: Any) => p.port));
    assert.ok(ports.includes(8061), JSON.stringify(ports));
    // Other services stay without one.
    const math = find(objs, "Service", `${FULL}-math`) as Any;
    assert.equal(math.spec.ports.length, 2);
  });

  it("appProtocol is http when grpc.tls is off (plaintext HTTP/1.1)", async () => {
    const objs = await renderChart({
      grpc: { tls: { enabled: false } },
      services: { length: { httpPort: 8061 } },
    });
    const svc = find(objs, "Service", `${FULL}-length`) as Any;
    assert.equal(svc.spec.ports[2].appProtocol, "http");
  });

  it("refuses an httpPort equal to the gRPC or health port", async () => {
    for (const httpPort of [50061, 50071]) {
      const r = await renderChartRaw({ services: { length: { httpPort } } });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /services\.length: httpPort must differ from port and healthPort/);
    }
  });
});
