/**
 * The structure rules of the equivalence step (issue 28, STRUCTURE families): intervals written as
 * inequalities and unions in any order (`intervals.ts`), named tuples and assignment lists, matrices
 * with a factored scalar, sets with `\pm` elements, reversed equations (`structure.ts`), and the
 * negated forms that must stay rejected. Each rule is checked on both verdicts through
 * `answersEquivalent` on normal forms, the way `judge.ts` calls it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type AnswerType, answersEquivalent } from "./equivalence.js";
import { canonical, type Endpoint, intervalSetOf } from "./intervals.js";
import { normalizeAnswer } from "./normalize.js";
import { assignedValue, assignmentOf, inConventionalOrder, structure } from "./structure.js";

/** Whether a response's answer and a reference are judged equal (both normalised first). */
function same(candidate: string, reference: string, answerType: AnswerType = ""): boolean {
  return answersEquivalent(normalizeAnswer(candidate), normalizeAnswer(reference), {
    tolerance: 1e-6,
    answerType,
  }).equal;
}

const numbers = (s: string): number | undefined => {
  if (s === "\\infty") return Infinity;
  if (s === "-\\infty") return -Infinity;
  return /^-?\d+(?:\.\d+)?$/.test(s) ? Number(s) : undefined;
};

const ends = (set: ReturnType<typeof intervalSetOf>) =>
  set?.intervals
    .map((i) => `${i.loClosed ? "[" : "("}${i.lo.text},${i.hi.text}${i.hiClosed ? "]" : ")"}`)
    .join("∪");

describe("intervals written as inequalities", () => {
  it("reads chains, one-sided bounds, 'or'/'and', \\ne and x \\in … into sorted disjoint intervals", () => {
    assert.equal(ends(intervalSetOf("-2<x\\le3", numbers)), "(-2,3]");
    assert.equal(ends(intervalSetOf("3\\gex>-2", numbers)), "(-2,3]");
    assert.equal(ends(intervalSetOf("x\\ge5", numbers)), "[5,\\infty)");
    assert.equal(ends(intervalSetOf("5\\lex", numbers)), "[5,\\infty)");
    assert.equal(ends(intervalSetOf("x<-1orx>2", numbers)), "(-\\infty,-1)∪(2,\\infty)");
    assert.equal(ends(intervalSetOf("x>2\\cupx<-1", numbers)), "(-\\infty,-1)∪(2,\\infty)");
    assert.equal(ends(intervalSetOf("x>-3andx\\le1", numbers)), "(-3,1]");
    assert.equal(ends(intervalSetOf("x\\neq3", numbers)), "(-\\infty,3)∪(3,\\infty)");
    assert.equal(ends(intervalSetOf("x\\in(-2,3]", numbers)), "(-2,3]");
    assert.equal(intervalSetOf("x\\in(-2,3]", numbers)?.variable, "x");
    assert.equal(ends(intervalSetOf("x\\inR", numbers)), "(-\\infty,\\infty)");
  });

  it("reads nothing that is not a condition on one bare variable with numeric bounds", () => {
    for (const s of [
      "x=3",
      "-x>5",
      "x^2<4",
      "x<y",
      "1<x>0",
      "x<3ory>2",
      "\\neg(x<3)",
      "x\\lea",
      "3",
      "R",
      "x\\le\\infty",
    ]) {
      assert.equal(intervalSetOf(s, numbers), undefined, s);
    }
    // An empty set is not an interval set: `x < 1 and x > 2`.
    assert.equal(intervalSetOf("x<1andx>2", numbers), undefined);
    // A malformed interval is not one: `(3, 1)`, `[-\infty, 0)`.
    assert.equal(intervalSetOf("(3,1)", numbers), undefined);
    assert.equal(intervalSetOf("[-\\infty,0)", numbers), undefined);
  });

  it("merges overlapping and touching parts, not parts that only meet at an excluded point", () => {
    const e = (v: number): Endpoint => ({ text: String(v), value: v });
    const iv = (lo: number, hi: number, loClosed: boolean, hiClosed: boolean) => ({
      lo: e(lo),
      hi: e(hi),
      loClosed,
      hiClosed,
    });
    assert.equal(canonical([iv(2, 3, false, false), iv(1, 2, false, true)]).length, 1);
    assert.equal(canonical([iv(2, 3, false, false), iv(1, 2, false, false)]).length, 2);
    assert.deepEqual(canonical([iv(0, 5, true, false), iv(1, 2, true, true)]), [iv(0, 5, true, false)]);
  });

  it("equals the interval or union in either direction; bracket kinds and bounds must match", () => {
    assert.ok(same("-2 < x \\le 3", "(-2, 3]"));
    assert.ok(same("(-2, 3]", "-2 < x \\le 3"));
    assert.ok(same("x \\ge 5", "[5, \\infty)"));
    assert.ok(same("x < -1 \\text{ or } x > 2", "(-\\infty,-1)\\cup(2,\\infty)"));
    assert.ok(same("x<-1 \\cup x>2", "(-\\infty,-1)\\cup(2,\\infty)"));
    assert.ok(same("5 < x", "x > 5"));
    assert.ok(same("x > \\frac{1}{2}", "(0.5, \\infty)"));
    assert.ok(!same("-2 \\le x \\le 3", "(-2, 3]"));
    assert.ok(!same("x > 5", "[5, \\infty)"));
    assert.ok(!same("x \\le -1 \\text{ or } x > 2", "(-\\infty,-1)\\cup(2,\\infty)"));
    assert.ok(!same("x > \\pi", "(3.14, \\infty)"));
    assert.ok(!same("y > 5", "x > 5"), "two inequalities about different variables");
  });

  it("keeps a declared tuple, set or equation out of it, and an inequality is never a value", () => {
    assert.ok(!same("-2 < x \\le 3", "(-2, 3]", "tuple"));
    assert.ok(!same("x > 5", "(5, \\infty)", "set"));
    assert.ok(same("x \\ge 5", "[5, \\infty)", "interval"));
    assert.ok(!same("x \\ge 5", "5"));
    assert.ok(!same("x \\ge 5", "x = 5"));
  });

  it("compares unions in any order, merging touching parts", () => {
    assert.ok(same("(3,4)\\cup(-\\infty,0)", "(-\\infty,0)\\cup(3,4)"));
    assert.ok(same("(1,2]\\cup(2,3)", "(1,3)"));
    assert.ok(!same("(1,2)\\cup(2,3)", "(1,3)"), "2 is excluded");
    assert.ok(!same("(3,4]\\cup(-\\infty,0)", "(-\\infty,0)\\cup(3,4)"));
    // Symbolic ends have no value: the union is still unordered, compared part by part.
    assert.ok(same("(a,b)\\cup(c,\\infty)", "(c,\\infty)\\cup(a,b)"));
    assert.ok(!same("(a,b)\\cup(c,\\infty)", "(c,\\infty)\\cup[a,b)"));
    // A finite end against an infinite one is a different end, not an overflow.
    assert.ok(!same("(3,4)\\cup(5,\\infty)", "(-\\infty,0)\\cup(3,4)"));
  });
});

describe("named tuples and assignment lists", () => {
  it("reads (x,y)=(2,4) and x=2,y=4; not one variable, repeated names or non-variables", () => {
    assert.deepEqual(assignmentOf("(x,y)=(2,4)"), { names: ["x", "y"], values: ["2", "4"] });
    assert.deepEqual(assignmentOf("x=2,y=4"), { names: ["x", "y"], values: ["2", "4"] });
    for (const s of ["x=3", "x=1,x=2", "(1,2)=(2,4)", "(x,y)=(2,4,5)", "2x=4,y=1", "(x,y)=[2,4]"]) {
      assert.equal(assignmentOf(s), undefined, s);
    }
  });

  it("knows the conventional orders: alphabetical, by subscript, coordinate systems", () => {
    for (const names of [
      ["x", "y"],
      ["a", "b", "c"],
      ["x_1", "x_2"],
      ["r", "\\theta"],
      ["\\rho", "\\theta", "\\phi"],
    ]) {
      assert.ok(inConventionalOrder(names), names.join(","));
    }
    for (const names of [
      ["y", "x"],
      ["x_2", "x_1"],
      ["\\theta", "r"],
      ["x", "\\theta"],
    ]) {
      assert.ok(!inConventionalOrder(names), names.join(","));
    }
  });

  it("equals the plain tuple in conventional order only; two assignments name by name", () => {
    assert.ok(same("(x, y) = (2, 4)", "(2, 4)"));
    assert.ok(same("x = 2, y = 4", "(2,4)"));
    assert.ok(same("(2, 4)", "(x,y)=(2,4)"));
    assert.ok(same("x_1 = 2, x_2 = 4", "(2,4)"));
    assert.ok(same("y = 4, x = 2", "(x, y) = (2, 4)"));
    assert.ok(!same("(x, y) = (4, 2)", "(2, 4)"));
    assert.ok(!same("y = 4, x = 2", "(4, 2)"), "written out of order: which tuple it is is unknown");
    assert.ok(!same("(y, x) = (4, 2)", "(4, 2)"));
    assert.ok(!same("y = 4, x = 2", "(4, 2)", "tuple"));
    assert.ok(!same("(x, y) = (2, 4)", "[2, 4]", "interval"));
    assert.ok(!same("(a, b) = (2, 4)", "(x, y) = (2, 4)"), "different names");
  });
});

describe("matrices with a factored scalar", () => {
  it("multiplies the scalar into the entries; vmatrix is a determinant, not a matrix", () => {
    const m = structure("\\frac{1}{2}\\begin{pmatrix}2&4\\end{pmatrix}", "");
    assert.deepEqual(m, { kind: "matrix", rows: [["(\\frac{1}{2})\\cdot(2)", "(\\frac{1}{2})\\cdot(4)"]] });
    assert.deepEqual(structure("-\\begin{bmatrix}1\\\\2\\end{bmatrix}", ""), {
      kind: "matrix",
      rows: [["-(1)"], ["-(2)"]],
    });
    assert.equal(structure("\\begin{vmatrix}1&2\\\\3&4\\end{vmatrix}", "").kind, "scalar");
    assert.equal(structure("A=\\begin{pmatrix}1\\end{pmatrix}", "").kind, "scalar");
  });

  it("equals the scaled matrix, pmatrix and bmatrix alike; a different scalar or entry does not", () => {
    const ref = "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}";
    assert.ok(same("\\frac12\\begin{pmatrix}2&4\\\\6&8\\end{pmatrix}", ref));
    assert.ok(same("\\frac{1}{2}\\begin{bmatrix}2&4\\\\6&8\\end{bmatrix}", ref));
    assert.ok(same(ref, "\\frac{1}{2}\\begin{pmatrix}2&4\\\\6&8\\end{pmatrix}"));
    assert.ok(same("2 \\cdot \\begin{pmatrix}1&2\\end{pmatrix}", "\\begin{pmatrix}2&4\\end{pmatrix}"));
    assert.ok(same("\\left(\\begin{array}{cc}1&2\\\\3&4\\end{array}\\right)", ref));
    assert.ok(!same("\\frac{1}{3}\\begin{pmatrix}2&4\\\\6&8\\end{pmatrix}", ref));
    assert.ok(!same("\\frac{1}{2}\\begin{pmatrix}2&4\\\\6&9\\end{pmatrix}", ref));
    assert.ok(!same("-2\\begin{pmatrix}1&2\\end{pmatrix}", "\\begin{pmatrix}2&4\\end{pmatrix}"));
    assert.ok(!same("\\begin{vmatrix}1&2\\\\3&4\\end{vmatrix}", ref));
  });
});

describe("sets and lists with \\pm elements", () => {
  it("an element written a \\pm b is both elements", () => {
    assert.ok(same("\\{\\sqrt{2}, -\\sqrt{2}, 0\\}", "\\{0, \\pm\\sqrt2\\}"));
    assert.ok(same("\\pm 1, 0", "0, 1, -1"));
    assert.ok(!same("\\{\\sqrt{2}, 0\\}", "\\{0, \\pm\\sqrt2\\}"));
  });
});

describe("reversed and negated equations", () => {
  it("reads the value of an assignment written either way round, only with a bare variable", () => {
    assert.equal(assignedValue("x=3"), "3");
    assert.equal(assignedValue("3=x"), "3");
    assert.equal(assignedValue("\\pi=x"), "\\pi");
    for (const s of ["-x=3", "3=-x", "2=2x", "x^2=9"]) assert.equal(assignedValue(s), undefined, s);
  });

  it("3 = x is x = 3, and its value 3 unless an equation is asked for", () => {
    assert.ok(same("3 = x", "x = 3"));
    assert.ok(same("3 = x", "x = 3", "equation"));
    assert.ok(same("3 = x", "3"));
    assert.ok(same("3 = x", "3", "number"));
    assert.ok(same("\\frac{5}{2} = k", "2.5"));
    assert.ok(!same("3 = x", "3", "equation"));
    assert.ok(!same("-3 = x", "3"));
  });

  it("rejects negated forms: \\neq, a negated variable, a negated slope", () => {
    assert.ok(!same("x \\neq 3", "x = 3"));
    assert.ok(!same("x \\neq 3", "3"));
    assert.ok(!same("x \\ne 3", "x = 3", "equation"));
    assert.ok(!same("x \\not= 3", "x = 3"));
    assert.ok(!same("-x = 3", "3"));
    assert.ok(!same("3 = -x", "3"));
    assert.ok(!same("-x = 3", "x = 3"));
    assert.ok(!same("y = -2x", "y = 2x"));
    assert.ok(same("-x = -3", "x = 3", "equation"));
    assert.ok(same("x \\neq 3", "x \\not= 3"));
    assert.ok(same("x \\neq 3", "(-\\infty, 3)\\cup(3, \\infty)"));
  });
});
