import assert from "node:assert/strict";
import { it } from "node:test";
import { consumersOf, subjectMatches } from "./topology.js";

it("subjectMatches follows NATS wildcards", () => {
  assert.equal(subjectMatches("mesh.rollouts.code.>", "mesh.rollouts.code.run1"), true);
  assert.equal(subjectMatches("mesh.rollouts.code.>", "mesh.rollouts.code"), false);
  assert.equal(subjectMatches("mesh.rollouts.*.run1", "mesh.rollouts.agent.run1"), true);
  assert.equal(subjectMatches("mesh.rollouts.*.run1", "mesh.rollouts.agent.run2"), false);
  assert.equal(subjectMatches("mesh.rollouts.>", "mesh.rollouts.x.y"), true);
  assert.equal(subjectMatches("mesh.rollouts.code.run1", "mesh.rollouts.code.run1"), true);
  assert.equal(subjectMatches("mesh.rollouts.code.run1", "mesh.rollouts.code.run1.x"), false);
});

it("consumersOf finds the consumers reading a domain for any run", () => {
  const cs = [
    { name: "a--code", filters: ["mesh.rollouts.code.>"], pending: 0, ackPending: 0 },
    { name: "all", filters: ["mesh.rollouts.>"], pending: 0, ackPending: 0 },
    { name: "one-run", filters: ["mesh.rollouts.agent.r1"], pending: 0, ackPending: 0 },
  ];
  assert.deepEqual(
    consumersOf(cs, "code").map((c) => c.name),
    ["a--code", "all"],
  );
  assert.deepEqual(
    consumersOf(cs, "agent").map((c) => c.name),
    ["all"],
  );
});
