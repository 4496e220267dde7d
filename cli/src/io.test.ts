import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseFlags } from "./io.js";

describe("parseFlags", () => {
  const spec = { addr: "string", verbose: "boolean" } as const;

  it("reads --flag value, --flag=value and boolean flags; keeps positionals apart", () => {
    assert.deepEqual(parseFlags(["a", "--addr", "h:1", "--verbose", "b"], spec), {
      flags: { addr: "h:1", verbose: true },
      positional: ["a", "b"],
    });
    assert.deepEqual(parseFlags(["--addr=h:2"], spec).flags, { addr: "h:2" });
  });

  it("an Object member is an unknown option, not a flag found on the prototype (fuzz finding)", () => {
    for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
      assert.throws(() => parseFlags([`--${name}=x`], spec), {
        name: "UsageError",
        message: `unknown option '--${name}'`,
      });
    }
  });
});
