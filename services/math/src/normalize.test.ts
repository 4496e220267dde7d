/**
 * The notation rules of the normaliser (issue 28): repeating decimals, mixed numbers, base subscripts,
 * thousands groups, unit phrases and percent words, choice letters — and the comparison rules that go
 * with them (base numerals as written, choice letter with value, rational against irrational).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { all, create } from "mathjs";
import { answersEquivalent, type EquivalenceOptions } from "./equivalence.js";
import { isIrrationalValue, latexToExpression, mayBeIrrational, NotAnExpressionError } from "./latex.js";
import {
  baseNumeralsEqual,
  canonicalBaseNumerals,
  mixedNumbersToFractions,
  normalizeAnswer,
  normalizeWithUnits,
  repeatingDecimalsToFractions,
} from "./normalize.js";

const DEFAULTS: EquivalenceOptions = { tolerance: 1e-6, answerType: "" };
const mathjs = create(all, { number: "number" });
/** The value of a variable-free LaTeX answer, through the translator and mathjs. */
const latexValue = (latex: string) => Number(mathjs.evaluate(latexToExpression(normalizeAnswer(latex))));
const same = (a: string, b: string, o: EquivalenceOptions = DEFAULTS) =>
  answersEquivalent(normalizeAnswer(a), normalizeAnswer(b), o).equal;

describe("repeating decimals", () => {
  it("reads the vinculum, parentheses, dots and an ellipsis as the exact fraction", () => {
    const cases: [string, string][] = [
      ["0.\\overline{3}", "\\frac{1}{3}"],
      ["0.\\overline3", "\\frac{1}{3}"],
      ["0.\\bar{3}", "\\frac{1}{3}"],
      ["0.1\\overline{6}", "\\frac{1}{6}"],
      ["0.\\overline{142857}", "\\frac{1}{7}"],
      ["1.\\overline{6}", "\\frac{5}{3}"],
      ["2.0\\overline{45}", "\\frac{45}{22}"],
      [".\\overline{3}", "\\frac{1}{3}"],
      ["0.(3)", "\\frac{1}{3}"],
      ["0.1(6)", "\\frac{1}{6}"],
      ["0.\\dot{3}", "\\frac{1}{3}"],
      ["0.\\dot{1}4285\\dot{7}", "\\frac{1}{7}"],
      ["0.\\overline{9}", "1"],
      ["0.333\\ldots", "\\frac{1}{3}"],
      ["0.1666...", "\\frac{1}{6}"],
      ["0.454545\\dots", "\\frac{5}{11}"],
    ];
    for (const [written, fraction] of cases) assert.equal(normalizeAnswer(written), fraction, written);
    assert.equal(normalizeAnswer("-0.\\overline{6}"), "-\\frac{2}{3}");
  });

  it("leaves segments, truncations and short repeats alone", () => {
    assert.equal(normalizeAnswer("\\overline{AB}"), "\\overline{AB}");
    // An ellipsis after digits that do not repeat three times is a truncation: the decimal shown.
    assert.equal(repeatingDecimalsToFractions("3.14159\\ldots"), "3.14159");
    assert.equal(repeatingDecimalsToFractions("2.718281828\\ldots"), "2.718281828");
    assert.equal(repeatingDecimalsToFractions("0.4545..."), "0.4545");
    // A list's ellipsis is not a decimal's.
    assert.equal(repeatingDecimalsToFractions("1,2,3,\\ldots"), "1,2,3,\\ldots");
    // Parentheses after a number without a decimal point are a product or a call.
    assert.equal(repeatingDecimalsToFractions("2(3)"), "2(3)");
  });

  it("compares by value: 0.\\overline{16} is 16/99, not 1/6; 0.\\overline{3} is not 0.3 or 0.333", () => {
    assert.ok(same("0.\\overline{36}", "\\frac{4}{11}"));
    assert.ok(!same("0.\\overline{16}", "\\frac16"));
    assert.ok(!same("0.\\overline{3}", "0.3"));
    assert.ok(!same("0.\\overline{3}", "0.333"));
  });
});

describe("mixed numbers (PRM800K: 7 3/4 => 7+3/4)", () => {
  it("turns a digit group before a proper numeric fraction into an improper fraction", () => {
    assert.equal(normalizeAnswer("2\\frac{1}{2}"), "\\frac{5}{2}");
    assert.equal(normalizeAnswer("2 \\frac12"), "\\frac{5}{2}");
    assert.equal(normalizeAnswer("2\\dfrac{1}{2}"), "\\frac{5}{2}");
    assert.equal(normalizeAnswer("2 1/2"), "\\frac{5}{2}");
    assert.equal(normalizeAnswer("12\\frac{1}{2}"), "\\frac{25}{2}");
    assert.equal(normalizeAnswer("-1\\frac{1}{3}"), "-\\frac{4}{3}");
    assert.equal(normalizeAnswer("1, 2\\frac12"), "1,\\frac{5}{2}");
  });

  it("is not a mixed number after an operator, a comma, a letter, a power or a decimal", () => {
    assert.equal(mixedNumbersToFractions("2\\cdot\\frac{1}{2}"), "2\\cdot\\frac{1}{2}");
    assert.equal(mixedNumbersToFractions("2, \\frac{1}{2}"), "2, \\frac{1}{2}");
    assert.equal(mixedNumbersToFractions("x\\frac{1}{2}"), "x\\frac{1}{2}");
    assert.equal(mixedNumbersToFractions("x^2\\frac{1}{2}"), "x^2\\frac{1}{2}");
    assert.equal(mixedNumbersToFractions("2.5\\frac{1}{2}"), "2.5\\frac{1}{2}");
    assert.equal(mixedNumbersToFractions("2\\frac{\\pi}{3}"), "2\\frac{\\pi}{3}");
    assert.ok(same("2\\cdot\\frac12", "1"));
    assert.ok(same("x\\frac12", "\\frac{x}{2}"));
    assert.ok(same("x^2\\frac12", "\\frac{x^2}{2}"));
    assert.ok(same("2\\frac{\\sqrt3}{2}", "\\sqrt3"));
  });

  it("2 1/2 is neither 21/2 nor 1; an improper fraction part is ambiguous and compared as written", () => {
    assert.ok(!same("2 1/2", "\\frac{21}{2}"));
    assert.ok(!same("2\\frac12", "1"));
    assert.ok(same("2 1/2", "2.5"));
    // `2 3/2` keeps its parts apart (not 23/2); `2\frac{3}{2}` is neither 7/2 nor 3.
    assert.equal(normalizeAnswer("2 3/2"), "2\\,3/2");
    assert.ok(!same("2 3/2", "\\frac{23}{2}"));
    assert.ok(!same("2\\frac{3}{2}", "\\frac72"));
    assert.ok(!same("2\\frac{3}{2}", "3"));
    assert.ok(same("2\\frac{3}{2}", "2\\frac32"));
    assert.throws(() => latexToExpression("2\\frac{3}{2}"), NotAnExpressionError);
    assert.equal(typeof latexToExpression("x^2\\frac{3}{2}"), "string");
  });
});

describe("base subscripts", () => {
  it("has one canonical form: braces, upper-case digits, no leading zeros", () => {
    assert.equal(canonicalBaseNumerals("1011_2"), "1011_{2}");
    assert.equal(canonicalBaseNumerals("(01011)_2"), "1011_{2}");
    assert.equal(canonicalBaseNumerals("1011_{(2)}"), "1011_{2}");
    assert.equal(canonicalBaseNumerals("2a_{16}"), "2A_{16}");
    assert.equal(normalizeAnswer("\\text{B}3_{12}"), "B3_{12}");
    // Not numerals: an invalid digit for the base, no decimal digit, base 1.
    for (const v of ["x_1", "a_2", "a_{12}", "A_{12}", "x_{12}", "12_1"])
      assert.equal(canonicalBaseNumerals(v), v);
  });

  it("compares numerals as written: same base and digits; the subscript may be dropped on one side", () => {
    assert.equal(baseNumeralsEqual("1011_{2}", "1011_{2}"), true);
    assert.equal(baseNumeralsEqual("1011", "1011_{2}"), true);
    assert.equal(baseNumeralsEqual("1011_{2}", "1011_{3}"), false);
    assert.equal(baseNumeralsEqual("11", "1011_{2}"), false);
    assert.equal(baseNumeralsEqual("1011_{5}", "1011_{10}"), false);
    assert.equal(baseNumeralsEqual("42_{10}", "42"), true);
    assert.equal(baseNumeralsEqual("12", "13"), undefined);
    assert.ok(!same("101010_2", "42"));
    assert.ok(same("1011_2, 11_2", "11_{2}, 1011_{2}"));
  });
});

describe("thousands groups", () => {
  it("reads {,}, \\, and \\! between well-formed groups of three", () => {
    assert.equal(normalizeAnswer("1{,}000"), "1000");
    assert.equal(normalizeAnswer("10{,}000{,}000"), "10000000");
    assert.equal(normalizeAnswer("12{,}345.6"), "12345.6");
    assert.equal(normalizeAnswer("1\\,000"), "1000");
    assert.equal(normalizeAnswer("1\\!000"), "1000");
    assert.ok(!same("1{,}00", "100"));
    assert.ok(!same("1{,}5", "15"));
  });
});

describe("units, percent words and choice letters", () => {
  it("drops \\text / \\mbox unit phrases after any operand, naming their physical units", () => {
    const cases: [string, string, string[]][] = [
      ["5\\text{ cm}", "5", ["cm"]],
      ["12\\mbox{ inches}", "12", ["in"]],
      ["16\\text{cm}^2", "16", ["cm"]],
      ["8\\mbox{ cm}^3", "8", ["cm"]],
      ["4\\pi \\text{ cm}^2", "4\\pi", ["cm"]],
      ["4\\pi cm", "4\\pi", ["cm"]],
      ["24\\text{ square inches}", "24", ["in"]],
      ["3\\sqrt{2}\\text{ units}", "3\\sqrt{2}", []],
      ["60\\text{ miles per hour}", "60", ["mi/h"]],
      ["60 mph", "60", ["mi/h"]],
      ["60\\text{ km/h}", "60", ["km/h"]],
      ["20\\text{ m/s}", "20", ["m/s"]],
      ["5\\mathrm{m}", "5", ["m"]],
      ["25\\text{ percent}", "25", []],
      ["25 percent", "25", []],
      ["40\\text{ per cent}", "40", []],
    ];
    for (const [written, normal, units] of cases) {
      assert.deepEqual(normalizeWithUnits(written), { normal, units }, written);
    }
  });

  it("keeps what is not a unit phrase: glued letters, operands after an operator, words without the space", () => {
    assert.equal(normalizeAnswer("3m"), "3m");
    assert.equal(normalizeAnswer("n + m"), "n+m");
    assert.equal(normalizeAnswer("x + \\text{cm}"), "x+cm");
    assert.equal(normalizeAnswer("5\\text{apples and pears}"), "5applesandpears");
    assert.equal(normalizeAnswer("\\text{Evelyn}"), "Evelyn");
  });

  it("compares a choice letter with its value against a letter, a value or both", () => {
    assert.equal(normalizeAnswer("\\text{(C) }12"), "(C)12");
    assert.ok(same("\\text{(C) } 12", "C"));
    assert.ok(same("(C)\\ 12", "12"));
    assert.ok(same("\\textbf{(B) } 10", "\\text{(B)}"));
    assert.ok(same("C", "\\text{(C) }12"));
    assert.ok(!same("(C)\\ 12", "D"));
    assert.ok(!same("(C)\\ 12", "13"));
    assert.ok(!same("(B)\\ 12", "\\text{(C) }12"));
    assert.ok(!same("(C)\\ 13", "\\text{(C) }12"));
    assert.ok(!same("B", "12"));
  });
});

describe("rational against irrational", () => {
  it("knows which translated values are irrational", () => {
    for (const l of ["\\pi", "\\sqrt{2}", "e", "\\ln 2", "2^{1/2}", "\\cos\\frac{\\pi}{5}"]) {
      assert.ok(isIrrationalValue(latexToExpression(normalizeAnswer(l)), latexValue(l)), l);
    }
    for (const l of [
      "\\sqrt{4}",
      "\\sin\\frac{\\pi}{6}",
      "\\log_2 8",
      "e^{\\ln 2}",
      "\\sqrt{2}\\sqrt{8}",
      "\\frac{1}{3}",
    ]) {
      assert.ok(!isIrrationalValue(latexToExpression(normalizeAnswer(l)), latexValue(l)), l);
    }
    assert.ok(!mayBeIrrational(latexToExpression("2^{-20}")));
    assert.ok(mayBeIrrational(latexToExpression("8^{0.5}")));
  });

  it("rejects a decimal or fraction for an irrational value under the default tolerance, not under a task's", () => {
    for (const [approx, exact] of [
      ["3.14", "\\pi"],
      ["3.14159", "\\pi"],
      ["1.414214", "\\sqrt2"],
      ["2.7182818", "e"],
      ["0.8660254", "\\frac{\\sqrt{3}}{2}"],
      ["\\frac{355}{113}", "\\pi"],
      ["1.414214", "2^{1/2}"],
    ]) {
      assert.ok(!same(approx!, exact!), `${approx} vs ${exact}`);
      assert.ok(!same(exact!, approx!), `${exact} vs ${approx}`);
    }
    assert.ok(same("3.1416", "\\pi", { tolerance: 1e-3, answerType: "" }));
    // Rational values keep the relative tolerance; exact forms of irrationals compare as before.
    assert.ok(same("0.3333333", "\\frac13"));
    assert.ok(!same("0.333", "\\frac13"));
    assert.ok(same("0.5", "\\sin\\frac{\\pi}{6}"));
    assert.ok(same("\\frac{2}{\\sqrt2}", "\\sqrt2"));
    assert.ok(same("0.00000095367431640625", "2^{-20}"));
  });
});
