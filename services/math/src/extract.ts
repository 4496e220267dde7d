/**
 * Final-answer extraction from a response, the way the MATH and GSM8K graders and the common
 * evaluation harnesses read it.
 *
 * `auto` (the default) takes the LAST explicit final-answer statement of the response, whichever kind
 * it is:
 *  - a box: `\boxed{…}` / `\fbox{…}` (braces nested to any depth) or `\boxed 5` — MATH's
 *    `last_boxed_only_string`;
 *  - "… answer is X" ("the answer is", "the final answer is", Minerva's "Final Answer: The final answer
 *    is X. I hope it is correct.", lm-eval's GSM8K chain-of-thought "The answer is X.");
 *  - an answer label: "Answer: X", "Final answer: X", "**Answer:** X", or a heading line "# Answer" /
 *    "**Final Answer**" with X on the next line (PRM800K's "# Answer\n\nX");
 *  - GSM8K's `#### X` line.
 * So a boxed guess followed by "Final answer: 5" is judged on 5, and a box followed by a different
 * "the answer is …" is judged on the later statement — what a reader takes as the answer. A statement
 * that names no answer ("the answer is correct", "the answer is consistent with …") is not one and is
 * skipped. Only when the response has no explicit statement at all, its last bold `**X**` is the answer
 * when nothing is computed after it (a final "So she earns **$18** a day."); then, when allowed, the
 * last number.
 *
 * Linear in the response's length (one scan per marker kind, one brace walk, a bounded number of
 * statements read from the end), so a megabyte response costs milliseconds, not a hang.
 * @module
 */

/** Where an answer must be found. */
export const AnswerFormat = {
  /** The last explicit statement (box, "answer is", answer label, `####`), then a final bold, then (if allowed) the last number. */
  auto: "auto",
  /** Only `\boxed{…}` / `\fbox{…}`. */
  boxed: "boxed",
  /** Only GSM8K's `#### n`. */
  gsm8k: "gsm8k",
  /** Only the last number of the response. */
  lastNumber: "last_number",
} as const;
/** One of {@link AnswerFormat}'s values. */
export type AnswerFormat = (typeof AnswerFormat)[keyof typeof AnswerFormat];

/**
 * How the final answer was found: a box; "… answer is X"; an answer label or heading ("Answer: X",
 * "# Answer"); a bold final statement; GSM8K's `####`; the last number.
 */
export type AnswerSource =
  | "boxed"
  | "fbox"
  | "the_answer_is"
  | "answer_label"
  | "bold"
  | "gsm8k"
  | "last_number";

/** A final answer and where it came from. */
export interface ExtractedAnswer {
  readonly answer: string;
  readonly source: AnswerSource;
  /** How many `\boxed`/`\fbox` the response has (the last one counts, as in MATH's `last_boxed_only_string`). */
  readonly boxedCount: number;
}

/** A statement found at `at` (the index where its marker starts). */
interface Candidate extends ExtractedAnswer {
  readonly at: number;
}

const BOX_MARKERS = ["\\boxed", "\\fbox"] as const;

/** The content of the brace group opening at `open` (`s[open] === "{"`), or undefined when unbalanced. */
export function braceGroup(s: string, open: number): { content: string; end: number } | undefined {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (c === "\\") {
      i++; // an escaped brace (`\{`) does not count
      continue;
    }
    if (c === "{") depth++;
    else if (c === "}") {
      depth--;
      if (depth === 0) return { content: s.slice(open + 1, i), end: i + 1 };
    }
  }
  return undefined;
}

function countOccurrences(s: string, needle: string): number {
  let n = 0;
  for (let i = s.indexOf(needle); i !== -1; i = s.indexOf(needle, i + needle.length)) n++;
  return n;
}

/** The last box of the response, with where it ends (markers inside it are part of the box). */
function lastBoxed(response: string): (Candidate & { end: number }) | undefined {
  let best: { at: number; marker: (typeof BOX_MARKERS)[number] } | undefined;
  for (const marker of BOX_MARKERS) {
    const at = response.lastIndexOf(marker);
    if (at !== -1 && (!best || at > best.at)) best = { at, marker };
  }
  if (!best) return undefined;
  const boxedCount = BOX_MARKERS.reduce((n, m) => n + countOccurrences(response, m), 0);
  let i = best.at + best.marker.length;
  while (response[i] === " ") i++;
  const source: AnswerSource = best.marker === "\\boxed" ? "boxed" : "fbox";
  if (response[i] === "{") {
    const g = braceGroup(response, i);
    if (!g) return undefined;
    return { at: best.at, end: g.end, answer: g.content, source, boxedCount };
  }
  // `\boxed 5` (MATH's graders accept the space form): up to the next `$` or whitespace.
  const m = /^[^\s$]+/.exec(response.slice(i, i + 200));
  return m ? { at: best.at, end: i + m[0].length, answer: m[0], source, boxedCount } : undefined;
}

/** "… answer is X": "the answer is", "the final answer is", "answer is:". */
const ANSWER_IS = /\b(?:final\s+)?answer\s+is\b[ \t]*:?/gi;
/** An answer label anywhere: "Answer: X", "Final answer: X", "**Answer:** X", "**Answer**: X". */
const ANSWER_LABEL = /\b(?:final\s+)?answer[ \t]*(?:\*\*|__)?[ \t]*:/gi;
/** A heading line that labels the next line: "# Answer", "### Final Answer", "**Final Answer**". */
const ANSWER_HEADING =
  /^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?[ \t]*(?:final[ \t]+)?answer[ \t]*(?:\*\*|__)?[ \t]*:?[ \t]*(?:\*\*|__)?[ \t]*$/gim;

/** How many statements, counted from the end, are read before giving up (a bound on the work). */
const MAX_STATEMENTS_READ = 64;
/** How far after its marker a statement is read. */
const STATEMENT_WINDOW = 2000;

/**
 * Words that describe an answer instead of stating one ("the answer is correct", "the answer is not
 * 3", "the answer is consistent with …"): a statement starting with one of them names no answer.
 */
const NOT_AN_ANSWER = new Set([
  "above",
  "as",
  "because",
  "below",
  "clearly",
  "confirmed",
  "consistent",
  "correct",
  "given",
  "how",
  "in",
  "incorrect",
  "indeed",
  "invalid",
  "likely",
  "not",
  "obviously",
  "probably",
  "reasonable",
  "right",
  "same",
  "shown",
  "still",
  "that",
  "the",
  "this",
  "to",
  "unchanged",
  "valid",
  "verified",
  "what",
  "whether",
  "which",
  "why",
  "wrong",
]);

/** The first math group of `s` at or after `from`: `$…$`, `$$…$$`, `\(…\)`, `\[…\]`. */
function mathGroup(s: string, from = 0): { start: number; end: number; content: string } | undefined {
  for (let i = from; i < s.length; i++) {
    const c = s[i];
    if (c === "\\" && (s[i + 1] === "(" || s[i + 1] === "[")) {
      const close = s.indexOf(s[i + 1] === "(" ? "\\)" : "\\]", i + 2);
      if (close === -1) return undefined;
      return { start: i, end: close + 2, content: s.slice(i + 2, close) };
    }
    if (c === "\\") {
      i++; // `\$` is a dollar sign, not a delimiter
      continue;
    }
    if (c === "$") {
      const double = s[i + 1] === "$";
      const open = i + (double ? 2 : 1);
      let close = open;
      for (; close < s.length; close++) {
        if (s[close] === "\\") close++;
        else if (s[close] === "$") break;
      }
      if (close >= s.length) return undefined;
      return { start: i, end: close + (double ? 2 : 1), content: s.slice(open, close) };
    }
  }
  return undefined;
}

/** Where the sentence that starts `line` ends: a period, `!`, `?` or `;` before a space or the end, outside math. */
function sentenceEnd(line: string): number {
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "$" || (c === "\\" && (line[i + 1] === "(" || line[i + 1] === "["))) {
      const g = mathGroup(line, i);
      if (!g) return line.length;
      i = g.end - 1;
      continue;
    }
    if (c === "\\") {
      i++;
      continue;
    }
    if (
      (c === "." || c === "!" || c === "?" || c === ";") &&
      (i + 1 === line.length || /\s/.test(line[i + 1]!))
    ) {
      return i;
    }
  }
  return line.length;
}

/** A clause that explains the answer instead of being part of it: "18, which is even", "5 because …". */
const TRAILING_CLAUSE = /,?\s+(?:because|since|which|as|so|for|when|if|where|and\s+(?:this|that|it|so))\b/i;

const BOLD = /\*\*([^*\n]+?)\*\*|__([^_\n]+?)__/;

/**
 * The answer a statement names, read from `rest` (the text right after its marker): a math group or a
 * bold group when the statement starts with one (or only words precede it), else the plain words up to
 * the end of the sentence; undefined when it names no answer.
 */
function readStatement(rest: string): string | undefined {
  let s = rest.replace(/^[ \t]*(?:\*\*|__)?[ \t]*/, "");
  // Nothing on the marker's line ("Final Answer:\n\n$42$"): the next non-empty line.
  if (s.startsWith("\n") || s.startsWith("\r")) s = s.replace(/^\s+/, "");
  if (s === "") return undefined;
  // Display math may span lines.
  if (s.startsWith("$$") || s.startsWith("\\[")) {
    const g = mathGroup(s);
    return g ? nonEmpty(g.content) : undefined;
  }
  const line = s.split("\n", 1)[0]!;
  const end = sentenceEnd(line);
  const sentence = line.slice(0, end);
  const math = mathGroup(sentence);
  if (math && !/\d/.test(sentence.slice(0, math.start))) return nonEmpty(math.content);
  const bold = BOLD.exec(sentence);
  if (bold && !/\d/.test(sentence.slice(0, bold.index))) return nonEmpty(bold[1] ?? bold[2] ?? "");
  let plain = sentence.replace(/\*\*|__/g, "");
  const clause = TRAILING_CLAUSE.exec(plain);
  if (clause) plain = plain.slice(0, clause.index);
  // "The total cost is $18": the value after the verb of a worded subject.
  const verb = [...plain.matchAll(/\s(?:is|are|equals|was|were)\s+/gi)].pop();
  if (verb && /^[a-z][a-z\s]*$/i.test(plain.slice(0, verb.index)))
    plain = plain.slice(verb.index + verb[0].length);
  plain = plain.trim().replace(/[.,:!]+$/, "");
  if (plain === "") return undefined;
  const words = plain.split(/\s+/);
  const first = words[0]!.toLowerCase().replace(/[^a-z]/g, "");
  if (NOT_AN_ANSWER.has(first)) return undefined;
  // A long run of words that does not start like a value is prose, not an answer.
  if (words.length > 5 && /^[a-z]/i.test(plain)) return undefined;
  return plain;
}

function nonEmpty(s: string): string | undefined {
  const t = s.trim();
  return t === "" ? undefined : t;
}

/** Every marker of one kind: its start and where its statement starts. */
function markers(response: string, re: RegExp): { at: number; after: number }[] {
  const out: { at: number; after: number }[] = [];
  re.lastIndex = 0;
  for (let m = re.exec(response); m !== null; m = re.exec(response)) {
    out.push({ at: m.index, after: m.index + m[0].length });
    if (m[0].length === 0) re.lastIndex++;
  }
  return out;
}

/** The last statement marked by "answer is", an answer label or heading, that names an answer and starts after `after`. */
function lastMarkedStatement(response: string, after: number): Candidate | undefined {
  const found = [
    ...markers(response, ANSWER_IS).map((m) => ({ ...m, source: "the_answer_is" as const })),
    ...markers(response, ANSWER_LABEL).map((m) => ({ ...m, source: "answer_label" as const })),
    ...markers(response, ANSWER_HEADING).map((m) => ({ ...m, source: "answer_label" as const })),
  ]
    .filter((m) => m.at >= after)
    .sort((a, b) => b.at - a.at);
  for (const m of found.slice(0, MAX_STATEMENTS_READ)) {
    const answer = readStatement(response.slice(m.after, m.after + STATEMENT_WINDOW));
    if (answer !== undefined) return { at: m.at, answer, source: m.source, boxedCount: 0 };
  }
  return undefined;
}

function gsm8kHashes(response: string): Candidate | undefined {
  const at = response.lastIndexOf("####");
  if (at === -1) return undefined;
  const line = response
    .slice(at + 4, at + 4 + 500)
    .split("\n")[0]!
    .trim();
  return line === "" ? undefined : { at, answer: line, source: "gsm8k", boxedCount: 0 };
}

/**
 * The last bold `**X**` of the response when it is the final statement — nothing computed after it (no
 * digit, no math follows: "So she makes **$18** every day. I hope this helps!"); a bold label
 * ("**Total:** 7") states what follows it on its line.
 */
function finalBold(response: string): ExtractedAnswer | undefined {
  // The tail from a line start: bold does not span lines, so `**` pairs are matched as written.
  let tail = response.slice(-4000);
  if (tail.length < response.length) tail = tail.slice(tail.indexOf("\n") + 1);
  const re = new RegExp(BOLD.source, "g");
  let last: RegExpExecArray | undefined;
  for (let m = re.exec(tail); m !== null; m = re.exec(tail)) last = m;
  if (!last) return undefined;
  const content = (last[1] ?? last[2] ?? "").trim();
  const after = tail.slice(last.index + last[0].length);
  const line = after.split("\n", 1)[0]!;
  const label = content.endsWith(":");
  if (/[\d$\\]/.test(label ? after.slice(line.length) : after)) return undefined;
  const answer = readStatement(label ? line : content);
  return answer === undefined ? undefined : { answer, source: "bold", boxedCount: 0 };
}

const NUMBER = /-?\d[\d,]*(?:\.\d+)?|-?\.\d+/g;

function lastNumber(response: string): ExtractedAnswer | undefined {
  // Only the tail: the last number of a megabyte response is near its end.
  const tail = response.slice(-4000);
  let last: string | undefined;
  for (let m = NUMBER.exec(tail); m !== null; m = NUMBER.exec(tail)) last = m[0];
  if (last === undefined) return undefined;
  return { answer: last.replace(/,$/, ""), source: "last_number", boxedCount: 0 };
}

const strip = (c: Candidate | undefined): ExtractedAnswer | undefined =>
  c && { answer: c.answer, source: c.source, boxedCount: c.boxedCount };

/** The last explicit final-answer statement: box, "answer is", answer label or heading, `####`. */
function lastStatement(response: string): ExtractedAnswer | undefined {
  const box = lastBoxed(response);
  // A statement inside the last box is part of it; one before the box loses to it anyway.
  const marked = lastMarkedStatement(response, box ? box.end : 0);
  const hashes = gsm8kHashes(response);
  let best: Candidate | undefined = box;
  for (const c of [marked, hashes]) if (c && (!best || c.at > best.at)) best = c;
  if (!best) return undefined;
  // boxedCount describes the response, whichever statement won.
  return { ...strip(best)!, boxedCount: box ? box.boxedCount : countBoxes(response) };
}

function countBoxes(response: string): number {
  return BOX_MARKERS.reduce((n, m) => n + countOccurrences(response, m), 0);
}

/**
 * The final answer of `response`, or undefined when the format's marker is absent.
 * @param allowLastNumber whether `auto` may fall back to the last number (GSM8K-style lenient
 *   grading); off, a response without a marker has no answer (`format = 0`).
 */
export function extractAnswer(
  response: string,
  format: AnswerFormat,
  allowLastNumber: boolean,
): ExtractedAnswer | undefined {
  switch (format) {
    case "boxed":
      return strip(lastBoxed(response));
    case "gsm8k":
      return strip(gsm8kHashes(response));
    case "last_number":
      return lastNumber(response);
    case "auto":
      return (
        lastStatement(response) ?? finalBold(response) ?? (allowLastNumber ? lastNumber(response) : undefined)
      );
  }
}
