/**
 * The inbox and the calendar of a suite's `environment.yaml` (its `inbox:` and `calendar:` documents),
 * validated the way the pydantic models would: a missing or mistyped field is reported through the
 * suite's `fail(path, what)` (each suite names its own file in the error). The models' `initial_*`
 * fields (construction input only, excluded from every diff upstream) are not kept.
 * @module
 */
import { parseDataDatetime } from "../py/pydatetime.js";
import type { Calendar, CalendarEvent, Email, EmailContact, Inbox, PyDate, PyDatetime } from "./models.js";

/** Reports a bad field of the data (the path in the document and what is wrong); never returns. */
export type Fail = (path: string, what: string) => never;

type Doc = Record<string, unknown>;

/** pydantic's (strict enough) reading of a data document's fields; errors go to `fail`. */
export class Reader {
  constructor(readonly fail: Fail) {}
  obj(v: unknown, path: string): Doc {
    if (typeof v !== "object" || v === null || Array.isArray(v)) this.fail(path, "must be a mapping");
    return v as Doc;
  }
  list(v: unknown, path: string): unknown[] {
    if (!Array.isArray(v)) this.fail(path, "must be a list");
    return v;
  }
  str(v: unknown, path: string): string {
    // PyYAML reads unquoted numbers as ints; pydantic's lax `str` field rejects ints, so ids are quoted
    // in the data. Only strings are accepted here.
    if (typeof v !== "string") this.fail(path, "must be a string");
    return v;
  }
  strList(v: unknown, path: string): string[] {
    return this.list(v, path).map((x, i) => this.str(x, `${path}[${i}]`));
  }
  bool(v: unknown, path: string, dflt: boolean): boolean {
    if (v === undefined) return dflt;
    if (typeof v !== "boolean") this.fail(path, "must be a boolean");
    return v;
  }
  datetime(v: unknown, path: string): PyDatetime {
    const s = this.str(v, path);
    return parseDataDatetime(s) ?? this.fail(path, `${JSON.stringify(s)} is not an ISO datetime`);
  }
  date(v: unknown, path: string): PyDate {
    const s = this.str(v, path);
    const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
    if (!m || !validDate(Number(m[1]), Number(m[2]), Number(m[3])))
      this.fail(path, "must be a date YYYY-MM-DD");
    return s;
  }
  oneOf<T extends string>(v: unknown, path: string, values: readonly T[], dflt: T): T {
    if (v === undefined) return dflt;
    const s = this.str(v, path);
    if (!(values as readonly string[]).includes(s)) this.fail(path, `must be one of ${values.join(", ")}`);
    return s as T;
  }
  /** A dict keyed by the items' ids (`*IDs must be unique` as the models' validators say it). */
  byId<T extends { id_: string }>(items: readonly T[], path: string, kind: string): Map<string, T> {
    const out = new Map<string, T>();
    for (const it of items) {
      if (out.has(it.id_)) this.fail(path, `${kind} IDs must be unique. Duplicate: '${it.id_}'`);
      out.set(it.id_, it);
    }
    return out;
  }
}

function validDate(y: number, mo: number, d: number): boolean {
  return y >= 1 && mo >= 1 && mo <= 12 && d >= 1 && d <= new Date(Date.UTC(y, mo, 0)).getUTCDate();
}

/** A `CalendarEvent` record. */
function readEvent(r: Reader, raw: unknown, path: string): CalendarEvent {
  const e = r.obj(raw, path);
  return {
    id_: r.str(e.id_, `${path}.id_`),
    title: r.str(e.title, `${path}.title`),
    description: r.str(e.description, `${path}.description`),
    start_time: r.datetime(e.start_time, `${path}.start_time`),
    end_time: r.datetime(e.end_time, `${path}.end_time`),
    location: e.location === null ? null : r.str(e.location, `${path}.location`),
    participants: r.strList(e.participants, `${path}.participants`),
    all_day: r.bool(e.all_day, `${path}.all_day`, false),
    status: r.oneOf(e.status, `${path}.status`, ["confirmed", "canceled"] as const, "confirmed"),
  };
}

/** An `Email` record (`cc`, `bcc` and `attachments` default to empty lists). */
function readEmail(r: Reader, raw: unknown, path: string): Email {
  const e = r.obj(raw, path);
  const attachments = r
    .list(e.attachments ?? [], `${path}.attachments`)
    .map((a, i) => (typeof a === "string" ? a : readEvent(r, a, `${path}.attachments[${i}]`)));
  return {
    id_: r.str(e.id_, `${path}.id_`),
    sender: r.str(e.sender, `${path}.sender`),
    recipients: r.strList(e.recipients, `${path}.recipients`),
    cc: r.strList(e.cc ?? [], `${path}.cc`),
    bcc: r.strList(e.bcc ?? [], `${path}.bcc`),
    subject: r.str(e.subject, `${path}.subject`),
    body: r.str(e.body, `${path}.body`),
    status: r.oneOf(e.status, `${path}.status`, ["sent", "received", "draft"] as const, "sent"),
    read: r.bool(e.read, `${path}.read`, false),
    timestamp: r.datetime(e.timestamp, `${path}.timestamp`),
    attachments,
  };
}

/** `Inbox(account_email, initial_emails)` from the document at `path` (`inbox`). */
export function readInbox(r: Reader, raw: unknown, path: string): Inbox {
  const inbox = r.obj(raw, path);
  const emails = r
    .list(inbox.initial_emails, `${path}.initial_emails`)
    .map((e, i) => readEmail(r, e, `${path}.initial_emails[${i}]`));
  return {
    account_email: r.str(inbox.account_email, `${path}.account_email`),
    emails: r.byId(emails, `${path}.initial_emails`, "Email"),
    contact_list: contactListOf(emails),
    trash: new Map(),
  };
}

/** `Calendar(current_day, account_email, initial_events)` from the document at `path` (`calendar`). */
export function readCalendar(r: Reader, raw: unknown, path: string): Calendar {
  const calendar = r.obj(raw, path);
  const events = r
    .list(calendar.initial_events, `${path}.initial_events`)
    .map((e, i) => readEvent(r, e, `${path}.initial_events[${i}]`));
  return {
    current_day: r.date(calendar.current_day, `${path}.current_day`),
    account_email: r.str(calendar.account_email, `${path}.account_email`),
    events: r.byId(events, `${path}.initial_events`, "Event"),
  };
}

/** `Inbox._create_contact_list`: every address of the initial emails, named from its local part. */
export function contactListOf(emails: readonly Email[]): EmailContact[] {
  const out: EmailContact[] = [];
  const seen = new Set<string>();
  for (const e of emails) {
    for (const address of [...e.recipients, e.sender, ...e.cc, ...e.bcc]) {
      if (seen.has(address)) continue;
      seen.add(address);
      out.push({ email: address, name: pyTitle(address.split("@")[0]!.replaceAll(".", " ")) });
    }
  }
  return out;
}

/** Python's `str.title()` for ASCII-ish text: a letter after a non-letter is upper-cased, others lowered. */
export function pyTitle(s: string): string {
  let out = "";
  let prevCased = false;
  for (const ch of s) {
    const cased = ch.toLowerCase() !== ch.toUpperCase();
    out += cased ? (prevCased ? ch.toLowerCase() : ch.toUpperCase()) : ch;
    prevCased = cased;
  }
  return out;
}
