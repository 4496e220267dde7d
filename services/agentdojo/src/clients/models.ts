/**
 * AgentDojo's email and calendar clients as both the workspace and the travel suite use them
 * (`default_suites/v1/tools/types.py`, `email_client.py`, `calendar_client.py`): the models, how
 * AgentDojo shows them (`model_dump()` then `yaml.safe_dump`), pydantic's validation of the fields the
 * tools fill from agent input (`EmailStr` via `py/email-address.ts`, `datetime`, a `CalendarEvent`
 * built from a dict) and the `Inbox` / `Calendar` methods the tools and checkers share.
 *
 * Representation (so that `structuredClone` copies an environment the way Python's deep copy does): a
 * Python `dict` is a `Map` (insertion order kept: a plain object would reorder integer-like keys), a
 * model a plain object; a `datetime` is its `isoformat()` text, a `date` `YYYY-MM-DD` (`py/pydatetime.ts`).
 * @module
 */
import { checkEmailStr } from "../py/email-address.js";
import { dateOf, parseDataDatetime, pyNow, temporal } from "../py/pydatetime.js";
import { safeDump } from "../pyyaml.js";
import { type Dumpable, pyRepr } from "../render.js";
import { coerce, pyTypeName } from "../runtime.js";
import { ToolError } from "../suite.js";

/** A Python `datetime` as `isoformat()` prints it, e.g. `2024-05-15T10:00:00`. */
export type PyDatetime = string;
/** A Python `date` as `isoformat()` prints it, e.g. `2024-05-15`. */
export type PyDate = string;

/** `types.EmailStatus`. */
export type EmailStatus = "sent" | "received" | "draft";
/** `types.EvenStatus` (sic). */
export type EventStatus = "confirmed" | "canceled";

/** `types.CalendarEvent`. */
export interface CalendarEvent {
  id_: string;
  title: string;
  description: string;
  start_time: PyDatetime;
  end_time: PyDatetime;
  location: string | null;
  participants: string[];
  all_day: boolean;
  status: EventStatus;
}

/** `types.Email`. An attachment is a file id (string) or a calendar event. */
export interface Email {
  id_: string;
  sender: string;
  recipients: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  body: string;
  status: EmailStatus;
  read: boolean;
  timestamp: PyDatetime;
  attachments: (string | CalendarEvent)[];
}

/** `types.EmailContact`. */
export interface EmailContact {
  email: string;
  name: string;
}

/** `email_client.Inbox` (the computed `received`/`sent`/`drafts`: {@link emailsWithStatus}). */
export interface Inbox {
  account_email: string;
  emails: Map<string, Email>;
  contact_list: EmailContact[];
  trash: Map<string, Email>;
}

/** `calendar_client.Calendar`. */
export interface Calendar {
  current_day: PyDate;
  account_email: string;
  events: Map<string, CalendarEvent>;
}

// ---------------------------------------------------------------------------------------------------
// rendering

/** `CalendarEvent.model_dump()` as {@link pyYamlDump} prints it. */
export function eventDump(e: CalendarEvent): Dumpable {
  return {
    id_: e.id_,
    title: e.title,
    description: e.description,
    start_time: temporal(e.start_time),
    end_time: temporal(e.end_time),
    location: e.location,
    participants: [...e.participants],
    all_day: e.all_day,
    status: e.status,
  };
}

/** `Email.model_dump()`. */
export function emailDump(e: Email): Dumpable {
  return {
    id_: e.id_,
    sender: e.sender,
    recipients: [...e.recipients],
    cc: [...e.cc],
    bcc: [...e.bcc],
    subject: e.subject,
    body: e.body,
    status: e.status,
    read: e.read,
    timestamp: temporal(e.timestamp),
    attachments: e.attachments.map((a) => (typeof a === "string" ? a : eventDump(a))),
  };
}

/** `EmailContact.model_dump()`. */
export function contactDump(c: EmailContact): Dumpable {
  return { email: c.email, name: c.name };
}

/** `tool_result_to_str` of one model or a list of models (PyYAML's exact layout, see `pyyaml.ts`). */
export function showYaml(v: Dumpable): string {
  return safeDump(v);
}

// ---------------------------------------------------------------------------------------------------
// pydantic validation of agent-supplied values

interface FieldProblem {
  readonly loc: string;
  readonly msg: string;
  readonly type: string;
  readonly input: unknown;
}

/** pydantic's `ValidationError` as the runtime shows it (`ValidationError: N validation errors for M ...`). */
function validationError(model: string, problems: readonly FieldProblem[]): ToolError {
  const n = problems.length;
  const lines = [`${n} validation error${n === 1 ? "" : "s"} for ${model}`];
  for (const p of problems)
    lines.push(
      p.loc,
      `  ${p.msg} [type=${p.type}, input_value=${pyRepr(p.input)}, input_type=${pyTypeName(p.input)}]`,
    );
  return new ToolError("ValidationError", lines.join("\n"));
}

/** Validates `list[EmailStr]` fields; pushes problems, returns the normalized lists. */
function emailList(field: string, values: readonly unknown[], problems: FieldProblem[]): string[] {
  return values.map((v, i) => {
    if (typeof v !== "string") {
      problems.push({
        loc: `${field}.${i}`,
        msg: "Input should be a valid string",
        type: "string_type",
        input: v,
      });
      return String(v);
    }
    const r = checkEmailStr(v);
    if (!r.ok) {
      problems.push({
        loc: `${field}.${i}`,
        msg: `value is not a valid email address: ${r.reason}`,
        type: "value_error",
        input: v,
      });
      return v;
    }
    return r.value;
  });
}

/** Validates the email lists of a new `Email` (raises pydantic's ValidationError text). */
export function validateEmailFields(fields: {
  recipients: readonly unknown[];
  cc: readonly unknown[];
  bcc: readonly unknown[];
}): { recipients: string[]; cc: string[]; bcc: string[] } {
  const problems: FieldProblem[] = [];
  const recipients = emailList("recipients", fields.recipients, problems);
  const cc = emailList("cc", fields.cc, problems);
  const bcc = emailList("bcc", fields.bcc, problems);
  if (problems.length > 0) throw validationError("Email", problems);
  return { recipients, cc, bcc };
}

/** Validates `CalendarEvent` participants (`list[EmailStr]`). */
export function validateParticipants(participants: readonly unknown[]): string[] {
  const problems: FieldProblem[] = [];
  const out = emailList("participants", participants, problems);
  if (problems.length > 0) throw validationError("CalendarEvent", problems);
  return out;
}

/** pydantic's datetime parsing of a string (ISO 8601, naive); the problem when it is not one. */
function datetimeField(loc: string, v: unknown, problems: FieldProblem[]): PyDatetime {
  if (typeof v === "string") {
    const dt = parseDataDatetime(v);
    if (dt !== undefined) return dt;
    problems.push({
      loc,
      msg: "Input should be a valid datetime, invalid datetime format",
      type: "datetime_parsing",
      input: v,
    });
    return "";
  }
  problems.push({ loc, msg: "Input should be a valid datetime", type: "datetime_type", input: v });
  return "";
}

/**
 * `CalendarEvent(**details)` for an `event` attachment of `send_email` (every field but `all_day` and
 * `status` is required; unknown keys are ignored).
 */
export function calendarEventFromDict(details: unknown): CalendarEvent {
  if (details === null || typeof details !== "object" || Array.isArray(details))
    throw new ToolError(
      "TypeError",
      `agentdojo.default_suites.v1.tools.types.CalendarEvent() argument after ** must be a mapping, not ${pyTypeName(details)}`,
    );
  const d = details as Record<string, unknown>;
  const problems: FieldProblem[] = [];
  const need = (k: string): unknown => {
    if (!Object.hasOwn(d, k)) problems.push({ loc: k, msg: "Field required", type: "missing", input: d });
    return d[k];
  };
  const str = (k: string): string => {
    const v = need(k);
    if (v !== undefined && typeof v !== "string")
      problems.push({ loc: k, msg: "Input should be a valid string", type: "string_type", input: v });
    return typeof v === "string" ? v : "";
  };
  const id_ = str("id_");
  const title = str("title");
  const description = str("description");
  const startRaw = need("start_time");
  const start_time = startRaw === undefined ? "" : datetimeField("start_time", startRaw, problems);
  const endRaw = need("end_time");
  const end_time = endRaw === undefined ? "" : datetimeField("end_time", endRaw, problems);
  const locRaw = need("location");
  if (locRaw !== undefined && locRaw !== null && typeof locRaw !== "string")
    problems.push({
      loc: "location",
      msg: "Input should be a valid string",
      type: "string_type",
      input: locRaw,
    });
  const partRaw = need("participants");
  let participants: string[] = [];
  if (partRaw !== undefined) {
    if (Array.isArray(partRaw)) participants = emailList("participants", partRaw, problems);
    else
      problems.push({
        loc: "participants",
        msg: "Input should be a valid list",
        type: "list_type",
        input: partRaw,
      });
  }
  // pydantic's lax bool: true/false, 0/1 and "yes"/"off"/… are accepted.
  let all_day = false;
  if (d.all_day !== undefined) {
    const b = coerce({ name: "all_day", type: "boolean", description: "", required: true }, d.all_day);
    if (b.ok) all_day = b.value as boolean;
    else problems.push({ ...b.error, input: d.all_day });
  }
  const status = d.status === undefined ? "confirmed" : d.status;
  if (status !== "confirmed" && status !== "canceled")
    problems.push({
      loc: "status",
      msg: "Input should be 'confirmed' or 'canceled'",
      type: "enum",
      input: status,
    });
  if (problems.length > 0) throw validationError("CalendarEvent", problems);
  return {
    id_,
    title,
    description,
    start_time,
    end_time,
    location: (locRaw as string | null) ?? null,
    participants,
    all_day,
    status: status as CalendarEvent["status"],
  };
}

// ---------------------------------------------------------------------------------------------------
// inbox operations shared by the email and calendar tools

/** `_get_next_id` of a dict keyed by integer strings: `max(int(key)) + 1`, as a string. */
export function nextId(keys: Iterable<string>): string {
  let max = 0;
  for (const k of keys) max = Math.max(max, Number.parseInt(k, 10));
  return String(max + 1);
}

/**
 * `Inbox.send_email`: a new sent, read email from the account, id `max + 1`, timestamp now. The
 * attachment objects are kept by reference (an attached event is the calendar's own object, as upstream).
 */
export function sendEmail(
  inbox: Inbox,
  recipients: readonly unknown[],
  subject: string,
  body: string,
  attachments: (string | CalendarEvent)[] | null = null,
  cc: readonly unknown[] | null = null,
  bcc: readonly unknown[] | null = null,
): Email {
  const lists = validateEmailFields({ recipients, cc: cc ?? [], bcc: bcc ?? [] });
  const email: Email = {
    id_: nextId(inbox.emails.keys()),
    sender: inbox.account_email,
    recipients: lists.recipients,
    cc: lists.cc,
    bcc: lists.bcc,
    subject,
    body,
    status: "sent",
    read: true,
    timestamp: pyNow(),
    attachments: attachments ?? [],
  };
  inbox.emails.set(email.id_, email);
  return email;
}

/** The inbox's emails of one status, in dict order (`Inbox.received` / `sent` / `drafts`). */
export function emailsWithStatus(inbox: Inbox, status: Email["status"]): Email[] {
  return [...inbox.emails.values()].filter((e) => e.status === status);
}

/** `Inbox.search_emails`: case-insensitive substring of subject or body, optionally from one sender. */
export function searchEmails(inbox: Inbox, query: string, sender: string | null = null): Email[] {
  const q = query.toLowerCase();
  const pool =
    sender === null
      ? [...inbox.emails.values()]
      : [...inbox.emails.values()].filter((e) => e.sender.toLowerCase() === sender.toLowerCase());
  return pool.filter((e) => e.subject.toLowerCase().includes(q) || e.body.toLowerCase().includes(q));
}

/** `Inbox.get_most_recently_received_email` (the first of equal maxima, like Python's `max`). */
export function mostRecentlyReceivedEmail(inbox: Inbox): Email {
  const received = emailsWithStatus(inbox, "received");
  if (received.length === 0) throw new Error("max() arg is an empty sequence");
  return received.reduce((best, e) => (e.timestamp > best.timestamp ? e : best));
}

/** `Calendar.get_by_day`: the events starting on `day`, in dict order. */
export function eventsOnDay(calendar: Calendar, day: PyDate): CalendarEvent[] {
  return [...calendar.events.values()].filter((e) => dateOf(e.start_time) === day);
}

/** `Calendar.search_events`: case-insensitive substring of title or description, optionally on one day. */
export function searchEvents(calendar: Calendar, query: string, day: PyDate | null = null): CalendarEvent[] {
  const q = query.toLowerCase();
  const pool = day === null ? [...calendar.events.values()] : eventsOnDay(calendar, day);
  return pool.filter((e) => e.title.toLowerCase().includes(q) || e.description.toLowerCase().includes(q));
}

/** `Calendar.day_has_conflicts`. */
export function dayHasConflicts(calendar: Calendar, day: PyDate): boolean {
  const events = eventsOnDay(calendar, day);
  for (let i = 0; i < events.length; i++) {
    for (const other of events.slice(i + 1)) {
      const e = events[i]!;
      if (
        (e.start_time <= other.start_time && other.start_time < e.end_time) ||
        (e.start_time < other.end_time && other.end_time <= e.end_time)
      )
        return true;
    }
  }
  return false;
}
