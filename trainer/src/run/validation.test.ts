/** Result validation rules, the run-start contract check and the rejection counting / rate-limited log. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import {
  ComponentStatus,
  DescribeResponseSchema,
  type RewardResult,
  RewardResultSchema,
} from "@reward-mesh/proto";
import { type LogFields, type Logger, parseRewardSubject } from "@reward-mesh/sdk";
import { resolveRunConfig } from "./config.js";
import {
  checkResult,
  checkRunAgainstContracts,
  contractOf,
  createResultValidator,
  type ServiceContract,
} from "./validation.js";

const contract: ServiceContract = contractOf(
  create(DescribeResponseSchema, {
    name: "tool-call",
    version: "1.2.0",
    domains: ["tool_call"],
    components: [
      { name: "format", min: 0, max: 1 },
      { name: "parameter_value", min: -1, max: 1 },
    ],
  }),
);
const contracts = new Map([["tool-call", contract]]);
const SUBJECT = "mesh.rewards.run1.tool-call.run1-s1-p0-0";

type Comp = { name: string; value: number; status?: ComponentStatus };
function result(
  components: Comp[],
  over: Partial<Pick<RewardResult, "runId" | "service" | "serviceVersion">> = {},
): RewardResult {
  return create(RewardResultSchema, {
    rolloutId: "run1-s1-p0-0",
    runId: "run1",
    step: 1,
    groupId: "s1-p0",
    service: "tool-call",
    serviceVersion: "1.2.0",
    components: components.map((c) => ({ status: ComponentStatus.OK, ...c })),
    groupSize: 2,
    ...over,
  });
}
const good = () => [
  { name: "format", value: 1 },
  { name: "parameter_value", value: -0.5 },
];
const verdict = (r: RewardResult, subject = SUBJECT) => {
  const v = checkResult(r, subject, "run1", contracts);
  return v.ok ? "ok" : `${v.reason}: ${v.detail}`;
};

describe("checkResult: one rule each", () => {
  it("accepts a result that matches the contract, statuses and bounds included", () => {
    assert.equal(verdict(result(good())), "ok");
    assert.equal(
      verdict(
        result([
          { name: "format", value: 0, status: ComponentStatus.ERROR },
          { name: "parameter_value", value: -1, status: ComponentStatus.TIMEOUT },
        ]),
      ),
      "ok",
    );
    assert.equal(
      verdict(
        result([
          { name: "format", value: 1 },
          { name: "parameter_value", value: 0, status: ComponentStatus.NOT_APPLICABLE },
        ]),
      ),
      "ok",
    );
  });

  it("run: the subject's run and the result's run must be this run", () => {
    assert.match(verdict(result(good(), { runId: "other" })), /^run-mismatch: run 'other'/);
    assert.match(verdict(result(good()), "mesh.rewards.other.tool-call.run1-s1-p0-0"), /^run-mismatch/);
    assert.match(verdict(result(good()), "mesh.rollouts.run1.tool-call.run1-s1-p0-0"), /^run-mismatch/);
  });

  it("service: a result is only believed on its own service's subject", () => {
    assert.equal(
      verdict(result(good(), { service: "length" })),
      "service-mismatch: result of 'length' published on mesh.rewards.run1.tool-call.run1-s1-p0-0",
    );
  });

  it("version: the one described at run start", () => {
    assert.equal(
      verdict(result(good(), { serviceVersion: "9.9.9" })),
      "wrong-version: version '9.9.9', the service described '1.2.0' at run start",
    );
  });

  it("component set: no unknown, duplicate or missing component", () => {
    assert.equal(
      verdict(result([...good(), { name: "bonus", value: 1 }])),
      "unknown-component: 'bonus' is not a component of 'tool-call'",
    );
    assert.equal(
      verdict(result([...good(), { name: "format", value: 1 }])),
      "duplicate-component: 'format' appears twice",
    );
    assert.equal(verdict(result([good()[0]!])), "missing-component: 'parameter_value' is missing");
  });

  it("numbers: finite and within the declared [min, max]", () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      assert.match(verdict(result([good()[0]!, { name: "parameter_value", value: bad }])), /^non-finite/);
    }
    assert.equal(
      verdict(result([{ name: "format", value: 3 }, good()[1]!])),
      "out-of-range: 'format' = 3, outside [0, 1]",
    );
    assert.equal(
      verdict(result([good()[0]!, { name: "parameter_value", value: -1.0000001 }])),
      "out-of-range: 'parameter_value' = -1.0000001, outside [-1, 1]",
    );
    assert.match(
      verdict(result([{ name: "format", value: 2, status: ComponentStatus.NOT_APPLICABLE }, good()[1]!])),
      /^out-of-range/,
      "N/A values obey the range too",
    );
  });

  it("statuses: ERROR / TIMEOUT carry the minimum; unknown statuses are refused", () => {
    assert.equal(
      verdict(result([{ name: "format", value: 1, status: ComponentStatus.ERROR }, good()[1]!])),
      "error-not-minimum: 'format' = 1 with status ERROR; the minimum is 0",
    );
    assert.match(
      verdict(result([good()[0]!, { name: "parameter_value", value: 0, status: ComponentStatus.TIMEOUT }])),
      /^error-not-minimum: 'parameter_value' = 0 with status TIMEOUT; the minimum is -1/,
    );
    assert.match(
      verdict(result([{ name: "format", value: 1, status: ComponentStatus.UNSPECIFIED }, good()[1]!])),
      /^bad-status: 'format' has status 0/,
    );
    assert.match(
      verdict(result([{ name: "format", value: 1, status: 42 as ComponentStatus }, good()[1]!])),
      /^bad-status/,
    );
  });

  it("leaves results of services the run does not use to the assembler", () => {
    assert.equal(
      verdict(result([{ name: "anything", value: 99 }], { service: "length" }), "mesh.rewards.run1.length.run1-s1-p0-0"),
      "ok",
    );
  });

  it("parses reward subjects", () => {
    assert.deepEqual(parseRewardSubject("mesh.rewards.r.s.x"), { runId: "r", service: "s", rolloutId: "x" });
    assert.equal(parseRewardSubject("mesh.rewards.r.s"), undefined);
    assert.equal(parseRewardSubject("mesh.dlq.s"), undefined);
  });
});

describe("checkRunAgainstContracts", () => {
  const config = (components: unknown, services?: unknown) =>
    resolveRunConfig({ components, ...(services ? { services } : {}), tasks: { sets: ["tool_call"] } });

  it("passes when every component is emitted and every routed domain consumed", () => {
    checkRunAgainstContracts(
      config([{ service: "tool-call", component: "format", weight: 1 }]),
      ["tool_call"],
      contracts,
    );
  });

  it("names a component the service does not emit", () => {
    assert.throws(
      () =>
        checkRunAgainstContracts(
          config([
            { service: "tool-call", component: "format", weight: 1 },
            { service: "tool-call", component: "fromat", weight: 1 },
          ]),
          ["tool_call"],
          contracts,
        ),
      (e: Error) =>
        e.name === "RunContractError" &&
        e.message ===
          "'components[1]' names 'tool-call/fromat', but service 'tool-call' 1.2.0 does not emit 'fromat' (it emits: format, parameter_value)",
    );
  });

  it("names a domain the run routes to a service that does not consume it", () => {
    assert.throws(
      () =>
        checkRunAgainstContracts(
          config([{ service: "tool-call", component: "format", weight: 1 }], {
            "tool-call": ["tool_call", "custom"],
          }),
          ["tool_call", "custom"],
          contracts,
        ),
      /service 'tool-call' does not consume domain 'custom' \(it consumes: tool_call\)/,
    );
  });
});

describe("createResultValidator", () => {
  function recordingLogger(lines: LogFields[]): Logger {
    const l: Logger = {
      debug: () => {},
      info: () => {},
      warn: (f) => lines.push(f),
      error: () => {},
      child: () => l,
    };
    return l;
  }

  it("counts rejections per service and reason, per step and in total; admits good results", () => {
    const lines: LogFields[] = [];
    const v = createResultValidator({
      runId: "run1",
      contracts,
      logger: recordingLogger(lines),
      logIntervalMs: 0,
    });
    assert.equal(v.admit(result(good()), SUBJECT), true);
    assert.equal(v.admit(result([{ name: "format", value: 7 }, good()[1]!]), SUBJECT), false);
    assert.equal(v.admit(result([{ name: "format", value: 7 }, good()[1]!]), SUBJECT), false);
    assert.equal(v.admit(result(good(), { serviceVersion: "0" }), SUBJECT), false);
    assert.deepEqual(v.takeStepCounts(), { "tool-call": { "out-of-range": 2, "wrong-version": 1 } });
    assert.deepEqual(v.takeStepCounts(), {});
    assert.equal(v.admit(result(good(), { service: "length" }), SUBJECT), false);
    assert.deepEqual(v.takeStepCounts(), { "tool-call": { "service-mismatch": 1 } });
    assert.deepEqual(v.totals(), {
      "tool-call": { "out-of-range": 2, "wrong-version": 1, "service-mismatch": 1 },
    });
    assert.equal(lines.length, 4, "interval 0: every rejection is logged");
    assert.equal(lines[0]!["reason"], "out-of-range");
    assert.equal(lines[0]!["detail"], "'format' = 7, outside [0, 1]");
    assert.equal(lines[0]!["rolloutId"], "run1-s1-p0-0");
  });

  it("logs the first rejection of each service/reason at once, then at most once per interval", () => {
    const lines: LogFields[] = [];
    let t = 1_000;
    const v = createResultValidator({
      runId: "run1",
      contracts,
      logger: recordingLogger(lines),
      logIntervalMs: 10_000,
      now: () => t,
    });
    const outOfRange = () => result([{ name: "format", value: 7 }, good()[1]!]);
    for (let i = 0; i < 50; i++) v.admit(outOfRange(), SUBJECT);
    v.admit(result([{ name: "format", value: Number.NaN }, good()[1]!]), SUBJECT);
    assert.deepEqual(
      lines.map((l) => l["reason"]),
      ["out-of-range", "non-finite"],
      "one line per reason, the rest suppressed",
    );
    t += 10_000;
    v.admit(outOfRange(), SUBJECT);
    assert.equal(lines.length, 3);
    assert.equal(lines[2]!["suppressedSinceLastLog"], 49);
    assert.deepEqual(v.totals(), { "tool-call": { "out-of-range": 51, "non-finite": 1 } });
  });
});
