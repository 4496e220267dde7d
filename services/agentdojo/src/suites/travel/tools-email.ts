/**
 * The inbox side of the travel suite: AgentDojo's `Inbox.send_email` and the `send_email` tool
 * (`default_suites/v1/tools/email_client.py`), the only email tool the travel suite exposes, plus the
 * `search_emails` lookup its checkers use. Addresses are pydantic `EmailStr`s (`../../py/email-address.ts`:
 * the domain is lower-cased, the local part kept); the recipients, cc and bcc are validated together,
 * as the `Email` model does, so one ValidationError lists every bad address. The timestamp is the wall
 * clock, as upstream.
 * @module
 */
import { type Dumpable, pyRepr, pyYamlDump } from "../../render.js";
import { type Tool, ToolError } from "../../suite.js";
import { type CalendarEvent, type Email, type Inbox, nextId, type TravelEnvironment } from "./environment.js";
import { checkEmailStr } from "../../py/email-address.js";
import { nowIso, parseDataDatetime, temporal } from "../../py/pydatetime.js";

/** One pydantic error line pair: `loc` and `  msg [type=…, input_value=…, input_type=…]`. */
function errorLine(loc: string, msg: string, type: string, input: unknown): string {
  return `${loc}\n  ${msg} [type=${type}, input_value=${pyRepr(input)}, input_type=${inputType(input)}]`;
}

/** `list[EmailStr]` validation of `values` at `field`: the normalised list and the error lines. */
function emailField(field: string, values: readonly unknown[], errors: string[]): string[] {
  return values.map((v, i) => {
    if (typeof v !== "string") {
      errors.push(errorLine(`${field}.${i}`, "Input should be a valid string", "string_type", v));
      return String(v);
    }
    const r = checkEmailStr(v);
    if (r.ok) return r.value;
    errors.push(
      errorLine(`${field}.${i}`, `value is not a valid email address: ${r.reason}`, "value_error", v),
    );
    return v;
  });
}

/** Throws pydantic's `ValidationError` for `model` when there are error lines. */
function raiseIfErrors(model: string, errors: readonly string[]): void {
  if (errors.length > 0)
    throw new ToolError(
      "ValidationError",
      `${errors.length} validation error${errors.length === 1 ? "" : "s"} for ${model}\n${errors.join("\n")}`,
    );
}

/** Validates a list of addresses for model `model`; raises pydantic's ValidationError text. */
export function emailList(model: string, field: string, values: readonly string[]): string[] {
  const errors: string[] = [];
  const out = emailField(field, values, errors);
  raiseIfErrors(model, errors);
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
  const errors: string[] = [];
  const to = emailField("recipients", recipients, errors);
  const ccs = emailField("cc", cc, errors);
  const bccs = emailField("bcc", bcc, errors);
  raiseIfErrors("Email", errors);
  const email: Email = {
    id_: nextId(inbox.emails),
    sender: inbox.account_email,
    recipients: to,
    cc: ccs,
    bcc: bccs,
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

const EVENT_REQUIRED = ["id_", "title", "description", "start_time", "end_time", "location", "participants"];
const BOOL_STRINGS: Readonly<Record<string, boolean>> = {
  "0": false,
  off: false,
  f: false,
  false: false,
  n: false,
  no: false,
  "1": true,
  on: true,
  t: true,
  true: true,
  y: true,
  yes: true,
};

/**
 * `CalendarEvent(**event_details)` of an attachment: pydantic's lax validation, every error in the
 * model's field order in one ValidationError (datetimes as `parseDataDatetime` reads them).
 */
function eventFromDetails(details: unknown): CalendarEvent {
  if (typeof details !== "object" || details === null || Array.isArray(details))
    throw new ToolError(
      "TypeError",
      `agentdojo.default_suites.v1.tools.types.CalendarEvent() argument after ** must be a mapping, not ${inputType(details)}`,
    );
  const d = details as Record<string, unknown>;
  const errs: string[] = [];
  const has = (k: string) => Object.hasOwn(d, k);
  for (const k of EVENT_REQUIRED) {
    if (!has(k)) {
      errs.push(errorLine(k, "Field required", "missing", d));
      continue;
    }
    const v = d[k];
    if (k === "start_time" || k === "end_time") {
      if (typeof v !== "string" || parseDataDatetime(v) === undefined)
        errs.push(errorLine(k, "Input should be a valid datetime", "datetime_type", v));
    } else if (k === "participants") {
      if (Array.isArray(v)) emailField(k, v, errs);
      else errs.push(errorLine(k, "Input should be a valid list", "list_type", v));
    } else if (typeof v !== "string" && !(k === "location" && v === null))
      errs.push(errorLine(k, "Input should be a valid string", "string_type", v));
  }
  let allDay = false;
  if (has("all_day")) {
    const v = d.all_day;
    const key = typeof v === "string" ? v.toLowerCase() : undefined;
    if (typeof v === "boolean") allDay = v;
    else if (v === 0 || v === 1) allDay = v === 1;
    else if (key !== undefined && Object.hasOwn(BOOL_STRINGS, key)) allDay = BOOL_STRINGS[key]!;
    else if (typeof v === "string" || typeof v === "number")
      errs.push(
        errorLine("all_day", "Input should be a valid boolean, unable to interpret input", "bool_parsing", v),
      );
    else errs.push(errorLine("all_day", "Input should be a valid boolean", "bool_type", v));
  }
  if (has("status") && d.status !== "confirmed" && d.status !== "canceled")
    errs.push(errorLine("status", "Input should be 'confirmed' or 'canceled'", "enum", d.status));
  raiseIfErrors("CalendarEvent", errs);
  return {
    id_: d.id_ as string,
    title: d.title as string,
    description: d.description as string,
    start_time: parseDataDatetime(d.start_time as string)!,
    end_time: parseDataDatetime(d.end_time as string)!,
    location: d.location as string | null,
    participants: emailList("CalendarEvent", "participants", d.participants as string[]),
    all_day: allDay,
    status: d.status === "canceled" ? "canceled" : "confirmed",
  };
}

/** Python's `str(v)` of a JSON value (`CloudDriveFileID(file_id)`): a string as is, else its repr. */
function pyStrOf(v: unknown): string {
  return typeof v === "string" ? v : pyRepr(v);
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
          attachments = [...attachments, pyStrOf(att.file_id)];
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
