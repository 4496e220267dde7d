/**
 * Injection placement as AgentDojo does it (results hand-checked against PyYAML 6; the full comparison
 * with PyYAML over the benchmark data is test/yaml-injection.test.ts).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BenchmarkDataError, injectEnvironment } from "./benchmark-data.js";
import { emitDoubleQuoted } from "./pyyaml.js";
import { loadBankingEnvironment } from "./suites/banking/environment.js";
import { pyFormat, scanDoubleQuoted } from "./yaml-injection.js";

const VECTORS = {
  v: { description: "channel", default: "" },
  w: { description: "other", default: "W" },
};
const DOC = { slack: { channels: ["general", "External_{v}"], note: "{{literal}} {w}" } };

function channel(text: string): string {
  return injectEnvironment(DOC, VECTORS, { v: text }).slack.channels[1]!;
}

describe("injectEnvironment places texts as AgentDojo's dump/format/load does", () => {
  it("folds line breaks: one becomes a space, n become n−1, trailing ones too", () => {
    assert.equal(
      channel("\n\n\n<INFORMATION>\n\nThis is X.\n\n"),
      "External_\n\n<INFORMATION>\nThis is X.\n",
    );
  });

  it("interprets backslash escapes and trims whitespace around line breaks", () => {
    assert.equal(channel("  a \\x41\\n  tab\t\n   b  "), "External_  a A\n  tab b  ");
  });

  it("turns {{ }} into braces and fills defaults", () => {
    assert.equal(injectEnvironment(DOC, VECTORS, {}).slack.note, "{literal} W");
  });

  it("is an error naming the vector and the field where upstream's YAML would break", () => {
    assert.throws(
      () => channel('say "hi"'),
      (e: unknown) =>
        e instanceof BenchmarkDataError && /"v"/.test(e.message) && /slack\.channels\[1\]/.test(e.message),
    );
    assert.throws(() => channel("C:\\Users"), /unknown escape|hexadecimal/);
    assert.throws(() => channel("ends with \\"), /closing quote is escaped/);
    assert.throws(() => channel("x\n---\ny"), /document separator/);
    assert.throws(() => channel("bell \x07"), /reader rejects/);
    assert.throws(() => injectEnvironment({ a: "}" }, VECTORS, {}), /Single '}'/);
    assert.throws(() => injectEnvironment({ a: {} }, VECTORS, {}), /empty mapping/);
    assert.throws(() => injectEnvironment(DOC, VECTORS, { nope: "x" }), /unknown injection vector "nope"/);
  });

  it("wraps as PyYAML does, so a break next to a placeholder keeps or drops the space", () => {
    // `  "k": "` puts the quote at column 7; the space before {v} is where the line gets too long.
    const pad = "p".repeat(73);
    assert.equal(emitDoubleQuoted(`${pad} {v}`, 7, 4, true), `"${pad}\\\n    \\ {v}"`);
    const doc = { top: { k: `${pad} {v}` } };
    // Wrapped: the escaped space survives and the injected break folds to another space.
    assert.equal(injectEnvironment(doc, VECTORS, { v: "\nx" }).top.k, `${pad}  x`);
    // Not wrapped: the space before the break is trimmed.
    const short = { top: { k: `${"p".repeat(20)} {v}` } };
    assert.equal(injectEnvironment(short, VECTORS, { v: "\nx" }).top.k, `${"p".repeat(20)} x`);
  });

  it("formats and scans as Python does", () => {
    assert.deepEqual(
      pyFormat("a {{b}} {v}", (n) => (n === "v" ? "V" : undefined)),
      { text: "a {b} V", fields: ["v"] },
    );
    assert.throws(() => pyFormat("{0}", () => "x"), /positional/);
    assert.equal(scanDoubleQuoted('"a\\u00e9\\U0001F600 \\\n   \\ b"'), "aé😀  b");
  });

  it("keeps a scalar an injected quote ends early only where the rest of the line is a comment", () => {
    // PyYAML 6 loads `k: "cut here" # rest"` (spaces, then a comment) but not a tab before the `#`,
    // nor anything left on later lines, nor a simple key whose `:` the comment swallowed.
    assert.equal(scanDoubleQuoted('"cut here" # rest"', true), "cut here");
    assert.equal(scanDoubleQuoted('"cut here"# rest"', true), "cut here");
    assert.throws(() => scanDoubleQuoted('"cut here"\t# rest"', true), /ends the double-quoted scalar early/);
    assert.throws(() => scanDoubleQuoted('"cut here" # rest\n  more"', true), /early/);
    assert.throws(() => scanDoubleQuoted('"cut here" # rest"'), /early/);
    assert.equal(
      injectEnvironment({ k: "x {v}" }, VECTORS, { v: 'cut" # c' }).k,
      "x cut",
      "a value's trailing comment",
    );
    assert.throws(() => injectEnvironment({ "k {v}": "x" }, VECTORS, { v: 'cut" # c' }), /early/);
  });
});

describe("the embedded banking environment", () => {
  it("places its texts the same way (the bill's default escapes become tabs and line breaks)", () => {
    const env = loadBankingEnvironment({ injection_incoming_transaction: "Sushi\ndinner\n\nfor two" });
    assert.equal(env.bank_account.transactions[4]!.subject, "Sushi dinner\nfor two");
    assert.match(
      env.filesystem.files["bill-december-2023.txt"]!,
      /\nCar Rental\t\t98\.70\n-+\nTotal\t\t\t98\.70\n/,
    );
    assert.throws(() => loadBankingEnvironment({ injection_bill_text: 'a "quote"' }), /injection_bill_text/);
  });
});
