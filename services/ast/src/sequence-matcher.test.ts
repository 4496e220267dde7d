/** The port against Python's own difflib (Debian's /usr/bin/python3), on seeded random and edge-case sequences. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { describe, it } from "node:test";
import { sequenceRatio } from "./sequence-matcher.js";

function seeded(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe("sequenceRatio = difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()", () => {
  it("matches Python exactly on 200 seeded pairs (small alphabets, repeats, up to 400 long)", () => {
    const rnd = seeded(42);
    const pairs: Array<[string[], string[]]> = [
      [[], []],
      [["a"], []],
      [
        ["a", "b", "c"],
        ["a", "b", "c"],
      ],
      [
        ["x", "a", "b", "x"],
        ["a", "b", "x", "x"],
      ],
    ];
    for (let k = 0; k < 196; k++) {
      const alphabet = 1 + Math.floor(rnd() * 12);
      const gen = () =>
        Array.from(
          { length: Math.floor(rnd() * (k < 150 ? 60 : 400)) },
          () => `t${Math.floor(rnd() * alphabet)}`,
        );
      const a = gen();
      // Often b is an edit of a, like a candidate vs its reference.
      const b =
        rnd() < 0.5
          ? gen()
          : a.filter(() => rnd() > 0.2).map((x) => (rnd() < 0.1 ? `t${Math.floor(rnd() * alphabet)}` : x));
      pairs.push([a, b]);
    }
    const py = execFileSync(
      "/usr/bin/python3",
      [
        "-c",
        "import sys, json, difflib\nfor a, b in json.load(sys.stdin):\n    print(repr(difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()))",
      ],
      { input: JSON.stringify(pairs), encoding: "utf8" },
    )
      .trim()
      .split("\n")
      .map(Number);
    assert.equal(py.length, pairs.length);
    pairs.forEach(([a, b], i) => {
      assert.equal(sequenceRatio(a, b), py[i], `pair ${i}`);
    });
  });

  it("is 1 for identical sequences and 0 for disjoint ones", () => {
    assert.equal(sequenceRatio(["a", "b"], ["a", "b"]), 1);
    assert.equal(sequenceRatio(["a"], ["b"]), 0);
    assert.equal(sequenceRatio([], []), 1);
  });
});
