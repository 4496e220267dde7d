/**
 * The inbox side of the travel suite: AgentDojo's `Inbox.send_email` and the `send_email` tool
 * (`default_suites/v1/tools/email_client.py`), the only email tool the travel suite exposes, plus the
 * `search_emails` lookup its checkers use. Addresses are pydantic `EmailStr`s: an address without a
 * single `@` and a dotted domain fails validation, the domain is lower-cased (`email-validator`'s
 * normalisation), the local part is kept. The timestamp is the wall clock, as upstream.
 * @module
 */
import { type Dumpable, pyRepr, pyYamlDump } from "../../render.js";
import { type Tool, ToolError } from "../../suite.js";
import { type CalendarEvent, type Email, type Inbox, nextId, type TravelEnvironment } from "./environment.js";
import { nowIso, parseDataDatetime, temporal } from "./pydatetime.js";

/** pydantic's `EmailStr`: the normalised address, or the reason it is not one. */
export function normalizeEmail(v: string): { ok: true; value: string } | { ok: false; reason: string } {
  const at = v.lastIndexOf("@");
  if (!v.includes("@")) return { ok: false, reason: "An email address must have an @-sign." };
  const local = v.slice(0, at);
  const domain = v.slice(at + 1);
  if (local === "") return { ok: false, reason: "There must be something before the @-sign." };
  if (local.includes("@") || /\s/.test(v))
    return { ok: false, reason: "The email address contains invalid characters before the @-sign." };
  if (domain === "") return { ok: false, reason: "There must be something after the @-sign." };
  if (!domain.includes(".") || domain.startsWith(".") || domain.endsWith(".") || domain.includes(".."))
    return { ok: false, reason: "The part after the @-sign is not valid. It should have a period." };
  return { ok: true, value: `${local}@${domain.toLowerCase()}` };
}

/** Validates a list of addresses for model `model`; raises pydantic's ValidationError text. */
export function emailList(model: string, field: string, values: readonly string[]): string[] {
  const errors: string[] = [];
  const out = values.map((v, i) => {
    const r = normalizeEmail(v);
    if (r.ok) return r.value;
    errors.push(
      `${field}.${i}\n  value is not a valid email address: ${r.reason} [type=value_error, input_value=${pyRepr(v)}, input_type=str]`,
    );
    return v;
  });
  if (errors.length > 0)
    throw new ToolError(
      "ValidationError",
      `${errors.length} validation error${errors.length === 1 ? "" : "s"} for ${model}\n${errors.join("\n")}`,
    );
  return out;
}

/** `CalendarEvent.model_dump()` for YAML output. */
export function eventDump(e: CalendarEvent): Dumpable {
  return {
    id_: e.id_,
    title: e.title,
    description: e.description,
    start_time: temporal(e.start_time),
    end_time: temporal(e.end_time),
    location: e.location,
    participants: e.participants,
    all_day: e.all_day,
    status: e.status,
  };
}

/** `Email.model_dump()` for YAML output. */
export function emailDump(m: Email): Dumpable {
  return {
    id_: m.id_,
    sender: m.sender,
    recipients: m.recipients,
    cc: m.cc,
    bcc: m.bcc,
    subject: m.subject,
    body: m.body,
    status: m.status,
    read: m.read,
    timestamp: temporal(m.timestamp),
    attachments: m.attachments.map((a) => (typeof a === "string" ? a : eventDump(a))),
  };
}

/** `Inbox.send_email`: a new sent, read email from the account with the next id. */
export function sendEmail(
  inbox: Inbox,
  recipients: readonly string[],
  subject: string,
  body: string,
  attachments: (string | CalendarEvent)[] = [],
  cc: readonly string[] = [],
  bcc: readonly string[] = [],
): Email {
  const email: Email = {
    id_: nextId(inbox.emails),
    sender: inbox.account_email,
    recipients: emailList("Email", "recipients", recipients),
    cc: emailList("Email", "cc", cc),
    bcc: emailList("Email", "bcc", bcc),
    subject,
    body,
    status: "sent",
    read: true,
    timestamp: nowIso(),
    attachments,
  };
  inbox.emails[email.id_] = email;
  return email;
}

/** `Inbox.search_emails(query)`: subject or body contains the query, case-insensitively. */
export function searchEmails(inbox: Inbox, query: string): Email[] {
  const q = query.toLowerCase();
  return Object.values(inbox.emails).filter(
    (m) => m.subject.toLowerCase().includes(q) || m.body.toLowerCase().includes(q),
  );
}

const EVENT_FIELDS = ["id_", "title", "description", "start_time", "end_time", "location", "participants"];

/** `CalendarEvent(**event_details)` of an attachment, with pydantic's errors for what is missing. */
function eventFromDetails(details: unknown): CalendarEvent {
  if (typeof details !== "object" || details === null || Array.isArray(details))
    throw new ToolError(
      "TypeError",
      `agentdojo.default_suites.v1.tools.types.CalendarEvent() argument after ** must be a mapping, not ${inputType(details)}`,
    );
  const d = details as Record<string, unknown>;
  const errs: string[] = [];
  const field = (k: string, msg: string, type: string, input: unknown) =>
    errs.push(`${k}\n  ${msg} [type=${type}, input_value=${pyRepr(input)}, input_type=${inputType(input)}]`);
  for (const k of EVENT_FIELDS) if (!Object.hasOwn(d, k)) field(k, "Field required", "missing", d);
  for (const k of ["id_", "title", "description"])
    if (Object.hasOwn(d, k) && typeof d[k] !== "string")
      field(k, "Input should be a valid string", "string_type", d[k]);
  const times: Record<string, string> = {};
  for (const k of ["start_time", "end_time"]) {
    if (!Object.hasOwn(d, k)) continue;
    const t = typeof d[k] === "string" ? parseDataDatetime(d[k] as string) : undefined;
    if (t === undefined) field(k, "Input should be a valid datetime", "datetime_type", d[k]);
    else times[k] = t;
  }
  const loc = d.location;
  if (Object.hasOwn(d, "location") && loc !== null && typeof loc !== "string")
    field("location", "Input should be a valid string", "string_type", loc);
  const parts = d.participants;
  if (
    Object.hasOwn(d, "participants") &&
    !(Array.isArray(parts) && parts.every((p) => typeof p === "string"))
  )
    field("participants", "Input should be a valid list", "list_type", parts);
  if (errs.length > 0)
    throw new ToolError(
      "ValidationError",
      `${errs.length} validation error${errs.length === 1 ? "" : "s"} for CalendarEvent\n${errs.join("\n")}`,
    );
  const status = d.status === "canceled" ? "canceled" : "confirmed";
  return {
    id_: d.id_ as string,
    title: d.title as string,
    description: d.description as string,
    start_time: times.start_time!,
    end_time: times.end_time!,
    location: (loc as string | null) ?? null,
    participants: emailList("CalendarEvent", "participants", parts as string[]),
    all_day: d.all_day === true,
    status,
  };
}

function inputType(v: unknown): string {
  if (v === null || v === undefined) return "NoneType";
  if (typeof v === "string") return "str";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "number") return Number.isInteger(v) ? "int" : "float";
  return Array.isArray(v) ? "list" : "dict";
}

/** `send_email(recipients, subject, body, attachments=None, cc=None, bcc=None)`. */
export const SEND_EMAIL: Tool<TravelEnvironment> = {
  name: "send_email",
  description:
    "Sends an email with the given `body` to the given `address`. Returns a dictionary with the email details.",
  parameters: [
    {
      name: "recipients",
      type: "array",
      items: "string",
      description: "The list with the email addresses of the recipients.",
      required: true,
    },
    { name: "subject", type: "string", description: "The subject of the email.", required: true },
    { name: "body", type: "string", description: "The body of the email.", required: true },
    {
      name: "attachments",
      type: "array",
      items: "object",
      description:
        'The list of attachments to include in the email. If `null`, no attachments are included.\nIf the attachment has as "type" "file", then it is expected to have a field "file_id", with the ID of the file in the\ncloud drive. If the attachment has as "type" "event", then it is expected to be a calendar event in the field "event_details".\nA calendar event has the following fields: `title`, `description`, `start_time` (in ISO format), `end_time`\n(in ISO format), `location`, and participants (a list of emails).',
      required: false,
      nullable: true,
      default: null,
    },
    {
      name: "cc",
      type: "array",
      items: "string",
      description:
        "The list of email addresses to include in the CC field. If `null`, no email addresses are included.",
      required: false,
      nullable: true,
      default: null,
    },
    {
      name: "bcc",
      type: "array",
      items: "string",
      description:
        "The list of email addresses to include in the BCC field. If `null`, no email addresses are included.",
      required: false,
      nullable: true,
      default: null,
    },
  ],
  run: (env, a) => {
    let attachments: (string | CalendarEvent)[] = [];
    if (a.attachments !== null) {
      for (const att of a.attachments as Record<string, unknown>[]) {
        if (!Object.hasOwn(att, "type"))
          throw new ToolError("ValueError", "Attachment must have a 'type' field.");
        if (att.type === "file" || Object.hasOwn(att, "file_id")) {
          if (!Object.hasOwn(att, "file_id"))
            throw new ToolError("ValueError", "Attachment of type 'file' must have a 'file_id' field.");
          attachments = [...attachments, String(att.file_id)];
        } else {
          if (!Object.hasOwn(att, "event_details"))
            throw new ToolError(
              "ValueError",
              "Attachment of type 'event' must have an 'event_details' field.",
            );
          attachments = [...attachments, eventFromDetails(att.event_details)];
        }
      }
    }
    const email = sendEmail(
      env.inbox,
      a.recipients as string[],
      a.subject as string,
      a.body as string,
      attachments,
      (a.cc as string[] | null) ?? [],
      (a.bcc as string[] | null) ?? [],
    );
    return pyYamlDump(emailDump(email));
  },
};
