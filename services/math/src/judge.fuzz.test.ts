/**
 * Fuzzing of what the math judge reads: responses and reference answers made of LaTeX pieces
 * (boxes, fractions, radicals, brackets, powers, macros) and any unicode. A judgement is always
 * returned — never an exception — with `correct` only when an answer was found, and an undecidable
 * answer carries its reason. Fixed seed, bounded runs (`@reward-mesh/sdk/testing`).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { fuzzCall, fuzzParameters, nastyString } from "@reward-mesh/sdk/testing";
import { judge } from "./judge.js";
import { DEFAULT_ANSWER_LIMITS } from "./normalize.js";

const piece = fc.constantFrom(
  "\\boxed{",
  "\\fbox{",
  "}",
  "{",
  "\\frac",
  "\\dfrac",
  "\\sqrt",
  "[",
  "]",
  "(",
  ")",
  "\\{",
  "\\}",
  "^",
  "_",
  "x",
  "y",
  "e",
  "i",
  "\\pi",
  "\\infty",
  "\\cup",
  "\\pm",
  "=",
  ",",
  "1",
  "0",
  "9",
  ".",
  "-",
  "+",
  "/",
  "!",
  "\\binom",
  "\\sin",
  "\\log_",
  "\\left(",
  "\\right)",
  "\\text{",
  "\\def",
  "\\%",
  "^\\circ",
  "&",
  "\\\\",
  "\\begin{pmatrix}",
  "\\end{pmatrix}",
  "<",
  "\\le",
  "\\ge",
  "\\neq",
  "\\text{ or }",
  "\\in",
  "The answer is ",
  "#### ",
  " ",
);
const latex = fc.oneof(
  fc.array(piece, { maxLength: 24 }).map((xs) => xs.join("")),
  nastyString(40),
);

describe("fuzz: math judge", () => {
  it("judges any response against any reference without throwing", () => {
    fc.assert(
      fc.property(
        latex,
        latex,
        fc.constantFrom("auto", "boxed", "gsm8k", "last_number" as const),
        fc.constantFrom("", "number", "interval", "set", "tuple", "equation" as const),
        (response, reference, answerFormat, answerType) => {
          const r = fuzzCall("judge", () =>
            judge({
              response,
              answers: [reference],
              answerType,
              answerFormat,
              tolerance: 1e-6,
              allowLastNumber: true,
              limits: DEFAULT_ANSWER_LIMITS,
            }),
          );
          assert.ok(r.ok);
          const j = r.value;
          assert.equal(typeof j.correct, "boolean");
          if (j.correct) assert.ok(j.format && j.error === undefined);
          if (j.error !== undefined) assert.ok(!j.correct && j.error.length > 0);
        },
      ),
      fuzzParameters(1500),
    );
  });
});
