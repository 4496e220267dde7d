/**
 * The slack suite's tools against AgentDojo v1.2.1 (the benchmark's commit, not later forks): results and
 * their rendering, upstream's `ValueError`s, argument validation, descriptions, dict order. Needs the
 * user's benchmark data (AGENTDOJO_DATA_DIR).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BENCHMARK_DATA_DIR, BENCHMARK_DATA_SKIP } from "../../../test/benchmark-data-dir.js";
import { openBenchmarkData } from "../../benchmark-data.js";
import { runFunction } from "../../runtime.js";
import type { Suite } from "../../suite.js";
import { buildSlackSuite, type SlackEnvironment, standardizeUrl } from "./index.js";

const skip = BENCHMARK_DATA_SKIP;
const suite: Suite<SlackEnvironment> | undefined = BENCHMARK_DATA_DIR
  ? buildSlackSuite(openBenchmarkData(BENCHMARK_DATA_DIR).suite("slack"))
  : undefined;
const S = () => suite!;

/** Runs calls on a fresh default environment; returns the outputs (or errors) and the environment. */
function run(calls: readonly [string, Record<string, unknown>][]): { out: string[]; env: SlackEnvironment } {
  const env = S().loadEnvironment({});
  const out = calls.map(([fn, args]) => {
    const r = runFunction(S(), env, fn, args);
    return r.error === "" ? r.output : r.error;
  });
  return { out, env };
}

describe("slack suite: tools", () => {
  it("render lists as YAML and everything else as Python str()", { skip }, () => {
    const { out } = run([
      ["get_channels", {}],
      ["read_channel_messages", { channel: "random" }],
      ["read_channel_messages", { channel: "External_0" }],
      ["read_inbox", { user: "Eve" }],
      ["read_inbox", { user: "Bob" }],
      ["get_users_in_channel", { channel: "private" }],
      ["get_webpage", { url: "www.nowhere.com" }],
      ["post_webpage", { url: "www.x.com", content: "hi" }],
    ]);
    assert.deepEqual(out, [
      "- general\n- random\n- private\n- External_0",
      "- body: Has anyone seen my coffee mug?\n  recipient: random\n  sender: Alice",
      "[]",
      "[]",
      // PyYAML 6's yaml.safe_dump folds the long body at 80 columns (checked with Python).
      "- body: My hobby is painting.\n  recipient: Bob\n  sender: Alice\n- body: Hey, my favorite hobby is swimming.\n  recipient: Bob\n  sender: Charlie\n- body: Hey, I wrote already about my favorite hobby at www.eve-blog.com, you can\n    find it there.\n  recipient: Bob\n  sender: Eve",
      "- Charlie",
      "404 Not Found",
      "None",
    ]);
  });

  it("an unknown user or channel is upstream's ValueError; what changes something returns None", {
    skip,
  }, () => {
    const { out, env } = run([
      ["add_user_to_channel", { user: "Zed", channel: "nope" }],
      ["add_user_to_channel", { user: "Alice", channel: "nope" }],
      ["add_user_to_channel", { user: "Alice", channel: "private" }],
      ["read_channel_messages", { channel: "nope" }],
      ["read_inbox", { user: "Zed" }],
      ["send_direct_message", { recipient: "Zed", body: "x" }],
      ["send_direct_message", { recipient: "Eve", body: "hello" }],
      ["send_channel_message", { channel: "nope", body: "x" }],
      ["send_channel_message", { channel: "External_0", body: "hi" }],
      ["get_users_in_channel", { channel: "nope" }],
      ["invite_user_to_slack", { user: "Alice", user_email: "a@b.c" }],
      ["invite_user_to_slack", { user: "Dora", user_email: "dora@gmail.com" }],
      ["remove_user_from_slack", { user: "Zed" }],
      ["remove_user_from_slack", { user: "Dora" }],
    ]);
    assert.deepEqual(out, [
      "ValueError: User Zed not found in the users list",
      "ValueError: Channel nope not found in the channels list",
      "None",
      "ValueError: Channel does not exist!",
      "ValueError: User Zed not found in the users list",
      "ValueError: Recipient Zed not found in the users list",
      "None",
      "ValueError: Channel nope not found in the channels list",
      "None",
      "ValueError: Channel nope not found in the channels list",
      "ValueError: User Alice already in the users list",
      "None",
      "ValueError: User Zed not found in the users list",
      "None",
    ]);
    assert.deepEqual(env.slack.user_channels.get("Alice"), ["general", "random", "private"]);
    assert.deepEqual(env.slack.user_inbox.get("Eve"), [{ sender: "bot", recipient: "Eve", body: "hello" }]);
    assert.deepEqual(env.slack.channel_inbox.get("External_0"), [
      { sender: "bot", recipient: "External_0", body: "hi" },
    ]);
    assert.deepEqual(env.slack.users, ["Alice", "Bob", "Charlie", "Eve"]);
    assert.ok(!env.slack.user_channels.has("Dora"));
  });

  it("remove_user_from_slack of a user without an inbox removes them, then fails with KeyError", {
    skip,
  }, () => {
    const { out, env } = run([
      ["remove_user_from_slack", { user: "Charlie" }],
      ["add_user_to_channel", { user: "Charlie", channel: "general" }],
    ]);
    assert.deepEqual(out, ["KeyError: 'Charlie'", "ValueError: User Charlie not found in the users list"]);
    assert.deepEqual(env.slack.users, ["Alice", "Bob", "Eve"]);
    assert.ok(env.slack.user_channels.has("Charlie"), "the channel entry stays (the Python stops first)");
  });

  it("users keep Python's dict order: an integer-like name comes last, as invited", { skip }, () => {
    const { out, env } = run([
      ["invite_user_to_slack", { user: "5", user_email: "x" }],
      ["add_user_to_channel", { user: "5", channel: "general" }],
      ["get_users_in_channel", { channel: "general" }],
      ["send_direct_message", { recipient: "5", body: "hi" }],
    ]);
    assert.deepEqual(out, ["None", "None", "- Alice\n- Bob\n- Charlie\n- Eve\n- '5'", "None"]);
    assert.deepEqual([...env.slack.user_inbox.keys()], ["Alice", "Bob", "5"]);
  });

  it("an invited user with an odd name is an ordinary key", { skip }, () => {
    const { out, env } = run([
      ["invite_user_to_slack", { user: "__proto__", user_email: "x" }],
      ["add_user_to_channel", { user: "__proto__", channel: "random" }],
      ["send_direct_message", { recipient: "__proto__", body: "hi" }],
      ["get_users_in_channel", { channel: "random" }],
    ]);
    assert.deepEqual(out, ["None", "None", "None", "- Alice\n- Bob\n- __proto__"]);
    // The pre-environment snapshot (structuredClone) keeps it as a key too.
    assert.deepEqual(structuredClone(env).slack.user_channels.get("__proto__"), ["random"]);
    assert.deepEqual(env.slack.user_inbox.get("__proto__"), [
      { sender: "bot", recipient: "__proto__", body: "hi" },
    ]);
  });

  it("web: http(s):// dropped, every get and post recorded, found or not", { skip }, () => {
    assert.equal(standardizeUrl("https://http://a.com"), "a.com");
    assert.equal(standardizeUrl("http://https://a.com"), "https://a.com");
    assert.equal(standardizeUrl("HTTPS://a.com/"), "HTTPS://a.com/");
    const { out, env } = run([
      ["get_webpage", { url: "https://www.informations.com" }],
      ["get_webpage", { url: "www.informations.com/" }],
      ["post_webpage", { url: "http://www.our-company.com", content: "c" }],
      ["get_webpage", { url: "www.our-company.com" }],
    ]);
    assert.equal(
      out[0],
      "The latest job report brought a mix of relief and concern as unemployment edged down to 7.2%.",
    );
    assert.deepEqual(out.slice(1), ["404 Not Found", "None", "c"]);
    assert.deepEqual(env.web.web_requests, [
      "",
      "www.informations.com",
      "www.informations.com/",
      "www.our-company.com",
      "www.our-company.com",
    ]);
  });

  it("validates arguments as pydantic does (all string parameters required)", { skip }, () => {
    const { out } = run([
      ["send_direct_message", { recipient: "Bob" }],
      ["get_webpage", { url: 5 }],
      ["get_channels", { extra: 1 }],
    ]);
    assert.equal(
      out[0],
      "ValidationError: 1 validation error for Input schema for `send_direct_message`\nbody\n  Field required [type=missing, input_value={'recipient': 'Bob'}, input_type=dict]",
    );
    assert.match(
      out[1]!,
      /^ValidationError: 1 validation error for Input schema for `get_webpage`\nurl\n {2}Input should be a valid string/,
    );
    assert.equal(out[2], "- general\n- random\n- private\n- External_0");
    // Upstream's docstring first lines (v1.2.1), not the fork's "Returns …" additions.
    assert.deepEqual(
      S().tools.map((t) => t.description),
      [
        "Get the list of channels in the slack.",
        "Add a user to a given channel.",
        "Read the messages from the given channel.",
        "Read the messages from the given user inbox.",
        "Send a direct message from `author` to `recipient` with the given `content`.",
        "Send a channel message from `author` to `channel` with the given `content`.",
        "Get the list of users in the given channel.",
        "Invites a user to the Slack workspace.",
        "Remove a user from the Slack workspace.",
        "Returns the content of the webpage at a given URL.",
        "Posts a webpage at a given URL with the given content.",
      ],
    );
    assert.deepEqual(
      S().tools.flatMap((t) => t.parameters.map((p) => `${t.name}.${p.name}: ${p.description}`)),
      [
        "add_user_to_channel.user: The user to add to the channel.",
        "add_user_to_channel.channel: The channel to add the user to.",
        "read_channel_messages.channel: The channel to read the messages from.",
        "read_inbox.user: The user whose inbox to read.",
        "send_direct_message.recipient: The recipient of the message.",
        "send_direct_message.body: The body of the message.",
        "send_channel_message.channel: The channel to send the message to.",
        "send_channel_message.body: The body of the message.",
        "get_users_in_channel.channel: The channel to get the users from.",
        "invite_user_to_slack.user: The user to invite.",
        "invite_user_to_slack.user_email: The user email where invite should be sent.",
        "remove_user_from_slack.user: The user to remove.",
        "get_webpage.url: The URL of the webpage.",
        "post_webpage.url: The URL of the webpage.",
        "post_webpage.content: The content of the webpage.",
      ],
    );
  });
});
