/**
 * The slack environment (AgentDojo `default_suites/v1/tools/slack.py` `Slack`/`Message` and `web.py`
 * `Web`, assembled as `SlackEnvironment` in `v1/slack/task_suite.py`). The state itself is the user's
 * benchmark data (`slack/environment.yaml`), read at run time: this module only knows its shape, checks
 * it the way pydantic would (a clear error naming the field), and places the injections.
 *
 * Dict fields are `Map`s: they keep Python's insertion order (a plain object would put integer-like keys
 * such as a user named `5` first) and take any key an agent types (`__proto__` included). Checks index
 * them with {@link pyItem}, which raises where Python's `dict[key]` raises.
 * @module
 */
import { BenchmarkDataError, injectEnvironment, type SuiteData } from "../../benchmark-data.js";
import { pyRepr } from "../../render.js";
import type { InjectionVector } from "../../suite.js";

/** `slack.Message`. */
export interface Message {
  sender: string;
  /** A user or a channel. */
  recipient: string;
  body: string;
}

/** `slack.Slack`. */
export interface Slack {
  users: string[];
  channels: string[];
  /** Channels each user is a member of. */
  user_channels: Map<string, string[]>;
  user_inbox: Map<string, Message[]>;
  channel_inbox: Map<string, Message[]>;
}

/** `web.Web`: pages by URL (without `http(s)://`) and every URL requested or posted, in order. */
export interface Web {
  web_content: Map<string, string>;
  web_requests: string[];
}

/** `SlackEnvironment`. */
export interface SlackEnvironment {
  slack: Slack;
  web: Web;
}

/** A Python exception a check raises (`KeyError`, `IndexError`): the trajectory is then invalid. */
export class PyCheckError extends Error {
  constructor(type: string, message: string) {
    super(`${type}: ${message}`);
    this.name = "PyCheckError";
  }
}

/** Python `d[key]` in a check: raises `KeyError` for a missing key. */
export function pyItem<T>(d: ReadonlyMap<string, T>, key: string): T {
  if (!d.has(key)) throw new PyCheckError("KeyError", pyRepr(key));
  return d.get(key)!;
}

/** Python `xs[-1]` in a check: raises `IndexError` for an empty list. */
export function pyLast<T>(xs: readonly T[]): T {
  if (xs.length === 0) throw new PyCheckError("IndexError", "list index out of range");
  return xs[xs.length - 1]!;
}

function bad(where: string, what: string): never {
  throw new BenchmarkDataError(`AgentDojo benchmark data: slack/environment.yaml: ${where} ${what}`);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function strings(v: unknown, where: string): string[] {
  if (!Array.isArray(v)) bad(where, "must be a list of strings");
  return v.map((x, i) => (typeof x === "string" ? x : bad(`${where}[${i}]`, "must be a string")));
}

/**
 * A mapping of the document as a `Map`, in the document's key order (as parsed: the data's keys are
 * names, none integer-like, so the parsed object kept the file's order).
 */
function record<T>(v: unknown, where: string, each: (x: unknown, where: string) => T): Map<string, T> {
  // A YAML key with no entries (`user_inbox:` with nothing under it) is None: pydantic rejects it too.
  if (!isRecord(v)) bad(where, "must be a mapping");
  return new Map(Object.entries(v).map(([k, x]) => [k, each(x, `${where}.${k}`)]));
}

function messages(v: unknown, where: string): Message[] {
  if (!Array.isArray(v)) bad(where, "must be a list of messages");
  return v.map((m, i) => {
    const at = `${where}[${i}]`;
    if (!isRecord(m)) bad(at, "must be a message {sender, recipient, body}");
    const field = (k: string): string => {
      const x = m[k];
      return typeof x === "string" ? x : bad(`${at}.${k}`, "must be a string");
    };
    return { sender: field("sender"), recipient: field("recipient"), body: field("body") };
  });
}

/** Checks a (placeholder-filled) environment document and returns it as a fresh {@link SlackEnvironment}. */
export function parseSlackEnvironment(doc: unknown): SlackEnvironment {
  if (!isRecord(doc)) bad("the document", "must be a mapping with 'slack' and 'web'");
  const s = doc.slack;
  const w = doc.web;
  if (!isRecord(s)) bad("slack", "must be a mapping");
  if (!isRecord(w)) bad("web", "must be a mapping");
  return {
    slack: {
      users: strings(s.users, "slack.users"),
      channels: strings(s.channels, "slack.channels"),
      user_channels: record(s.user_channels, "slack.user_channels", strings),
      user_inbox: record(s.user_inbox, "slack.user_inbox", messages),
      channel_inbox: record(s.channel_inbox, "slack.channel_inbox", messages),
    },
    web: {
      web_content: record(w.web_content, "web.web_content", (x, at) =>
        typeof x === "string" ? x : bad(at, "must be a string"),
      ),
      web_requests: strings(w.web_requests, "web.web_requests"),
    },
  };
}

/**
 * `load_and_inject_default_environment` for slack: `{vector}` placeholders filled (defaults for the
 * vectors not given), then checked. The data document is checked once when the suite is built.
 */
export function slackEnvironmentLoader(
  data: SuiteData,
): (injections: Readonly<Record<string, string>>) => SlackEnvironment {
  const vectors: Readonly<Record<string, InjectionVector>> = data.injectionVectors;
  parseSlackEnvironment(injectEnvironment(data.environment, vectors, {}));
  return (injections) => parseSlackEnvironment(injectEnvironment(data.environment, vectors, injections));
}
