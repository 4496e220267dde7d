/**
 * The slack environment (AgentDojo `default_suites/v1/tools/slack.py` `Slack`/`Message` and `web.py`
 * `Web`, assembled as `SlackEnvironment` in `v1/slack/task_suite.py`). The state itself is the user's
 * benchmark data (`slack/environment.yaml`), read at run time: this module only knows its shape, checks
 * it the way pydantic would (a clear error naming the field), and places the injections.
 *
 * Dict fields are plain objects whose keys may be anything an agent types (a user named `__proto__`
 * included): read and write them only through {@link hasKey}, {@link getKey} and {@link setKey}.
 * @module
 */
import { BenchmarkDataError, injectEnvironment, type SuiteData } from "../../benchmark-data.js";
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
  user_channels: Record<string, string[]>;
  user_inbox: Record<string, Message[]>;
  channel_inbox: Record<string, Message[]>;
}

/** `web.Web`: pages by URL (without `http(s)://`) and every URL requested or posted, in order. */
export interface Web {
  web_content: Record<string, string>;
  web_requests: string[];
}

/** `SlackEnvironment`. */
export interface SlackEnvironment {
  slack: Slack;
  web: Web;
}

/** Python `key in dict`. */
export function hasKey(o: object, k: string): boolean {
  return Object.hasOwn(o, k);
}

/** Python `dict.get(key)` (undefined for a missing key). */
export function getKey<T>(o: Readonly<Record<string, T>>, k: string): T | undefined {
  return Object.hasOwn(o, k) ? o[k] : undefined;
}

/** Python `dict[key] = value`, safe for any key (`__proto__` becomes an ordinary own key). */
export function setKey<T>(o: Record<string, T>, k: string, v: T): void {
  Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
}

/** Python `del dict[key]`; false when the key is missing (Python raises `KeyError`). */
export function deleteKey(o: Record<string, unknown>, k: string): boolean {
  if (!Object.hasOwn(o, k)) return false;
  delete o[k];
  return true;
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

function record<T>(v: unknown, where: string, each: (x: unknown, where: string) => T): Record<string, T> {
  // A YAML key with no entries (`user_inbox:` with nothing under it) is None: pydantic rejects it too.
  if (!isRecord(v)) bad(where, "must be a mapping");
  const out: Record<string, T> = {};
  for (const [k, x] of Object.entries(v)) setKey(out, k, each(x, `${where}.${k}`));
  return out;
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
