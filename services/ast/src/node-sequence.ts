/**
 * Python syntax trees with tree-sitter (`web-tree-sitter` + the wasm shipped in
 * `tree-sitter-python`; no native build), and CorrGRPO's identifier- and literal-independent
 * node-type sequence (`specs/rewards.md` §1.3 item 8): pre-order, each node's type, its children,
 * then `/type`.
 *
 * Mapping from tree-sitter's concrete tree to something close to CPython's `ast`:
 * * names and values never appear: every `identifier` is the token `identifier` (CPython `Name`),
 *   every literal (`integer`, `float`, `string` without interpolation, `true`, `false`, `none`,
 *   `ellipsis`, implicit concatenation) is `constant` (CPython `Constant`); an f-string is
 *   `fstring` with its interpolations inside (CPython `JoinedStr`);
 * * operator kinds are tokens, as CPython's `Add`/`Eq`/`And`/`Not` nodes are: the anonymous
 *   operator child of `binary_operator`, `comparison_operator`, `boolean_operator`,
 *   `unary_operator`, `not_operator` and `augmented_assignment` (`+`, `==`, `is not`, `and`, ...);
 * * transparent (no token, children kept), because CPython has no such node: `block`,
 *   `parenthesized_expression`, and `expression_statement` around an assignment;
 * * dropped: comments and other punctuation/keywords.
 * The remaining differences are listed in the service README.
 * @module
 */
import { createRequire } from "node:module";
import { Language, Parser, type Tree, type TreeCursor } from "web-tree-sitter";

const LITERALS = new Set(["integer", "float", "true", "false", "none", "ellipsis"]);
const OPERATOR_PARENTS = new Set([
  "binary_operator",
  "comparison_operator",
  "boolean_operator",
  "unary_operator",
  "not_operator",
  "augmented_assignment",
]);
const PUNCTUATION = new Set(["(", ")", "[", "]", "{", "}", ",", ":", ";", ".", "=", "->", "\\"]);
const TRANSPARENT = new Set(["block", "parenthesized_expression"]);
const ASSIGNMENTS = new Set(["assignment", "augmented_assignment"]);

let loaded: Promise<Parser> | undefined;

/** The shared parser (the wasm runtime and grammar load once, ~20 ms). */
export function pythonParser(): Promise<Parser> {
  loaded ??= (async () => {
    await Parser.init();
    const require = createRequire(import.meta.url);
    const language = await Language.load(require.resolve("tree-sitter-python/tree-sitter-python.wasm"));
    const parser = new Parser();
    parser.setLanguage(language);
    return parser;
  })();
  return loaded;
}

/** What parsing one piece of code found. */
export interface ParsedCode {
  /** False when tree-sitter had to insert ERROR or MISSING nodes. */
  readonly ok: boolean;
  /** `line L, column C: unexpected …` / `… missing …`, for details. */
  readonly problem: string;
  /** The node-type token sequence (empty when `ok` is false). */
  readonly tokens: readonly string[];
}

function firstProblem(tree: Tree): string {
  const c = tree.walk();
  try {
    const visit = (): string => {
      if (c.nodeType === "ERROR" || c.nodeIsMissing) {
        const p = c.startPosition;
        const text = c.nodeText.split("\n")[0]!.slice(0, 40);
        return c.nodeIsMissing
          ? `line ${p.row + 1}, column ${p.column + 1}: missing ${c.nodeType}`
          : `line ${p.row + 1}, column ${p.column + 1}: unexpected ${JSON.stringify(text)}`;
      }
      if (c.gotoFirstChild()) {
        do {
          const found = visit();
          if (found) return found;
        } while (c.gotoNextSibling());
        c.gotoParent();
      }
      return "";
    };
    return visit() || "syntax error";
  } finally {
    c.delete();
  }
}

function sequence(c: TreeCursor, out: string[], parentType: string): void {
  const type = c.nodeType;
  if (!c.nodeIsNamed) {
    if (OPERATOR_PARENTS.has(parentType) && !PUNCTUATION.has(type)) out.push(type);
    return;
  }
  if (type === "comment" || type === "line_continuation") return;
  let token: string | undefined = type;
  let descend = true;
  if (LITERALS.has(type)) {
    token = "constant";
    descend = false;
  } else if (type === "string" || type === "concatenated_string") {
    // f-strings keep their interpolations (CPython JoinedStr/FormattedValue); plain strings are one Constant.
    const interpolated = c.currentNode.descendantsOfType("interpolation").length > 0;
    token = interpolated ? "fstring" : "constant";
    descend = interpolated;
  } else if (TRANSPARENT.has(type)) {
    token = undefined;
  } else if (type === "expression_statement") {
    // CPython: `x = 1` is an Assign statement, not an Expr around one.
    if (c.gotoFirstChild()) {
      const inner = c.nodeType;
      c.gotoParent();
      if (ASSIGNMENTS.has(inner)) token = undefined;
    }
  }
  if (token) out.push(token);
  if (descend && c.gotoFirstChild()) {
    do {
      if (token === "fstring" && c.nodeType !== "interpolation" && c.nodeType !== "string") continue;
      sequence(c, out, type);
    } while (c.gotoNextSibling());
    c.gotoParent();
  }
  if (token) out.push(`/${token}`);
}

/** Parses `code` and, when it parses, returns its token sequence. */
export function parseCode(parser: Parser, code: string): ParsedCode {
  const tree = parser.parse(code);
  if (!tree) return { ok: false, problem: "tree-sitter returned no tree", tokens: [] };
  try {
    if (tree.rootNode.hasError) {
      let problem = "syntax error";
      try {
        problem = firstProblem(tree);
      } catch {
        // nested too deeply to locate
      }
      return { ok: false, problem, tokens: [] };
    }
    const out: string[] = [];
    const c = tree.walk();
    try {
      sequence(c, out, "");
    } catch (err) {
      if (err instanceof RangeError)
        return { ok: false, problem: "nested too deeply to compare", tokens: [] };
      throw err;
    } finally {
      c.delete();
    }
    return { ok: true, problem: "", tokens: out };
  } finally {
    tree.delete();
  }
}
