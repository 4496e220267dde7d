import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { closestName, editDistance } from "@reward-mesh/sdk";
import { type CommandSpec, formatHelp, parseCommand, parseOptions, usageLine, wantsHelp } from "./args.js";
import { UsageError } from "./io.js";

describe("parseOptions", () => {
  const spec = { addr: { type: "string" }, verbose: { type: "boolean" }, seeds: { type: "string" } } as const;

  it("reads --flag value, --flag=value and switches; keeps positionals apart, everything after -- too", () => {
    assert.deepEqual(parseOptions(["a", "--addr", "h:1", "--verbose", "b"], spec), {
      values: { addr: "h:1", verbose: true },
      positionals: ["a", "b"],
      help: false,
    });
    assert.deepEqual(parseOptions(["--addr=h:2"], spec).values, { addr: "h:2" });
    assert.deepEqual(parseOptions(["--", "--addr"], spec).positionals, ["--addr"]);
    // A value may start with a dash (a negative number), as before.
    assert.deepEqual(parseOptions(["--seeds", "-1"], spec).values, { seeds: "-1" });
  });

  it("applies a table's default when the option is absent, not when given", () => {
    const withDefault = { seeds: { type: "string", default: "3" } } as const;
    assert.deepEqual(parseOptions([], withDefault).values, { seeds: "3" });
    assert.deepEqual(parseOptions(["--seeds", "5"], withDefault).values, { seeds: "5" });
  });

  it("--help and -h ask for help; as another option's value they are that value", () => {
    assert.equal(parseOptions(["--help"], spec).help, true);
    assert.equal(parseOptions(["x", "-h"], spec).help, true);
    assert.deepEqual(parseOptions(["--addr", "-h"], spec), {
      values: { addr: "-h" },
      positionals: [],
      help: false,
    });
  });

  it("names a mistake in one line, with the nearest option for a typo", () => {
    const cases: Array<[string[], string]> = [
      [["--seeed", "3"], "unknown option '--seeed' (did you mean '--seeds'?)"],
      [["--ver"], "unknown option '--ver' (did you mean '--verbose'?)"],
      [["--frobnicate"], "unknown option '--frobnicate'"],
      [["-x"], "unknown option '-x'"],
      [["--verbose=1"], "option '--verbose' takes no value"],
      [["--addr"], "option '--addr' needs a value"],
      [["--addr="], "option '--addr' needs a value"],
      [["--help=1"], "option '--help' takes no value"],
    ];
    for (const [args, message] of cases)
      assert.throws(() => parseOptions(args, spec), { name: "UsageError", message }, args.join(" "));
  });

  it("an Object member is an unknown option, not a flag found on the prototype (fuzz finding)", () => {
    for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
      assert.throws(() => parseOptions([`--${name}=x`], spec), {
        name: "UsageError",
        message: new RegExp(`^unknown option '--${name}'`),
      });
    }
  });
});

describe("closestName", () => {
  it("suggests typos, transpositions and unique prefixes; nothing for an unrelated word", () => {
    const commands = [
      "serve",
      "score",
      "advantages",
      "up",
      "train",
      "report",
      "check",
      "experiment",
      "tasks",
      "demo",
    ];
    assert.equal(closestName("scroe", commands), "score");
    assert.equal(closestName("trian", commands), "train");
    assert.equal(closestName("experimnet", commands), "experiment");
    assert.equal(closestName("adv", commands), "advantages");
    assert.equal(closestName("frobnicate", commands), undefined);
    assert.equal(closestName("", commands), undefined);
    assert.equal(editDistance("ca", "abc"), 3);
    assert.equal(editDistance("abcd", "acbd"), 1);
    assert.equal(editDistance("", "abc"), 3);
  });
});

const SPEC: CommandSpec = {
  name: "widget",
  summary: "Make widgets.",
  positionals: [{ name: "<kind>", description: "what to make" }],
  options: {
    count: { type: "string", value: "N", default: "2", description: "how many" },
    colour: { type: "string", value: "name", required: true, description: "their colour" },
    shiny: { type: "boolean", description: "polish them", defaultText: "off" },
  },
  examples: ["reward-mesh widget round --colour red"],
};

describe("formatHelp", () => {
  it("prints the usage line, each option with its default, and the example", () => {
    assert.equal(usageLine(SPEC), "usage: reward-mesh widget <kind> [--count <N>] --colour <name> [--shiny]");
    const help = formatHelp(SPEC);
    assert.ok(help.startsWith(`${usageLine(SPEC)}\n\nMake widgets.\n`), help);
    assert.match(help, /^ {2}--count <N> +how many \(default: 2\)$/m);
    assert.match(help, /^ {2}--colour <name> +their colour \(required\)$/m);
    assert.match(help, /^ {2}--shiny +polish them \(default: off\)$/m);
    assert.match(help, /^ {2}-h, --help +print this help/m);
    assert.match(help, /^example:\n {2}reward-mesh widget round --colour red\n$/m);
  });

  it("parseCommand and wantsHelp read the same table", () => {
    assert.deepEqual(parseCommand(SPEC, ["round", "--colour", "red"]).values, { colour: "red", count: "2" });
    assert.equal(wantsHelp(SPEC, ["--colr", "--help"]), true, "a typo next to --help still gets the help");
    assert.equal(wantsHelp(SPEC, ["--colour", "--help"]), false, "'--help' is --colour's value here");
  });

  it("a misspelt bare-word positional is a usage error suggesting it; other words are the command's to judge", () => {
    const spec: CommandSpec = {
      name: "new",
      summary: "make things",
      positionals: [
        { name: "service", description: "what" },
        { name: "<name>", description: "its name" },
      ],
      options: {},
      examples: ["reward-mesh new service x"],
    };
    assert.deepEqual(parseCommand(spec, ["service", "servce"]).positionals, ["service", "servce"]);
    for (const typo of ["servce", "sevrice", "serivce", "servic"])
      assert.throws(
        () => parseCommand(spec, [typo, "x"]),
        (e: Error) =>
          e instanceof UsageError && e.message === `unknown argument '${typo}' (did you mean 'service'?)`,
        typo,
      );
    assert.deepEqual(parseCommand(spec, ["widget", "x"]).positionals, ["widget", "x"]);
    assert.deepEqual(
      parseCommand(SPEC, ["rnd", "--colour", "red"]).positionals,
      ["rnd"],
      "<kind> is any word",
    );
  });
});
