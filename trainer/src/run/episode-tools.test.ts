import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { compactToolsJson } from "./episode-tools.js";

// Two of the agentdojo service's banking tools, as its Reset returns them.
const BANKING = [
  {
    type: "function",
    function: {
      name: "get_iban",
      description: "Get the IBAN of the current bank account.",
      parameters: { type: "object", title: "Input schema for `get_iban`", properties: {}, required: [] },
    },
  },
  {
    type: "function",
    function: {
      name: "update_scheduled_transaction",
      description: "Update a scheduled transaction.\n\nMore lines the compact form drops.",
      parameters: {
        type: "object",
        title: "Input schema for `update_scheduled_transaction`",
        properties: {
          id: { type: "integer", description: "ID of the transaction (mandatory)", title: "Id" },
          recipient: {
            anyOf: [{ type: "string" }, { type: "null" }],
            description: "IBAN of the recipient (optional)",
            default: null,
          },
          amount: { anyOf: [{ type: "number" }, { type: "null" }], default: null },
          tags: { type: ["array", "null"] },
          extra: {},
        },
        required: ["id"],
      },
    },
  },
];

describe("compact tool schemas (episodes.tools: compact)", () => {
  it("keeps each tool's name, first description line and parameter types (? when optional)", () => {
    assert.deepEqual(JSON.parse(compactToolsJson(JSON.stringify(BANKING))), [
      { name: "get_iban", description: "Get the IBAN of the current bank account.", parameters: {} },
      {
        name: "update_scheduled_transaction",
        description: "Update a scheduled transaction.",
        parameters: { id: "integer", recipient: "string?", amount: "number?", tags: "array?", extra: "any?" },
      },
    ]);
  });

  it("reads bare tools too, and names what it cannot read", () => {
    assert.deepEqual(
      JSON.parse(
        compactToolsJson('[{"name": "f", "parameters": {"properties": {"x": {"type": "string"}}}}]'),
      ),
      [{ name: "f", parameters: { x: "string?" } }],
    );
    assert.throws(() => compactToolsJson('{"name": "f"}'), /toolsJson is not a JSON array/);
    assert.throws(() => compactToolsJson('[{"type": "function"}]'), /toolsJson\[0\] has no "name"/);
  });
});
