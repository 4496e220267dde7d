/**
 * The workspace environment (AgentDojo `WorkspaceEnvironment`: an inbox, a calendar and a cloud drive),
 * built from the benchmark's `workspace/environment.yaml` at run time. Field names are the Python ones.
 *
 * Representation choices (so that `structuredClone` copies an environment the way Python's deep copy does):
 * * a Python `dict` is a `Map` (insertion order kept: event ids are not in numeric order, and a plain
 *   object would reorder integer-like keys); a pydantic model is a plain object;
 * * a `datetime` is its Python `isoformat()` string, `YYYY-MM-DDTHH:MM:SS[.ffffff]` (so `===` is
 *   Python's `==` and `<` on two of them is Python's `<`); a `date` is `YYYY-MM-DD`;
 * * the models' `initial_*` fields (construction input only, excluded from every diff upstream) are not kept.
 * @module
 */
import { BenchmarkDataError, injectEnvironment, type SuiteData } from "../../benchmark-data.js";

/** A Python `datetime` as `isoformat()` prints it, e.g. `2024-05-15T10:00:00`. */
export type PyDatetime = string;
/** A Python `date` as `isoformat()` prints it, e.g. `2024-05-15`. */
export type PyDate = string;

/** `types.EmailStatus`. */
export type EmailStatus = "sent" | "received" | "draft";
/** `types.EvenStatus` (sic). */
export type EventStatus = "confirmed" | "canceled";
/** `types.SharingPermission`. */
export type SharingPermission = "r" | "rw";

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

/** `types.CloudDriveFile` (`size` is the content's length in code points). */
export interface CloudDriveFile {
  id_: string;
  filename: string;
  content: string;
  owner: string;
  last_modified: PyDatetime;
  shared_with: Map<string, SharingPermission>;
  size: number;
}

/** `email_client.Inbox` (computed `received`/`sent`/`drafts`: see `tools-email.ts`). */
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

/** `cloud_drive_client.CloudDrive`. */
export interface CloudDrive {
  account_email: string;
  files: Map<string, CloudDriveFile>;
}

/** `WorkspaceEnvironment`. */
export interface WorkspaceEnvironment {
  inbox: Inbox;
  calendar: Calendar;
  cloud_drive: CloudDrive;
}

// ---------------------------------------------------------------------------------------------------
// datetimes

const ISO_DATETIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,6}))?)?)?$/;

/**
 * Python's `datetime.fromisoformat(s).isoformat()` for naive datetimes (what `parse_datetime` in the
 * task files and pydantic's datetime parsing accept: `YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]]`).
 * Returns `undefined` when `s` is not such a datetime or names an impossible date or time.
 */
export function tryParseDatetime(s: string): PyDatetime | undefined {
  const m = ISO_DATETIME.exec(s);
  if (!m) return undefined;
  const [, y, mo, d, h = "00", mi = "00", sec = "00", frac] = m;
  if (!validDate(Number(y), Number(mo), Number(d))) return undefined;
  if (Number(h) > 23 || Number(mi) > 59 || Number(sec) > 59) return undefined;
  const micro = frac === undefined ? 0 : Number(frac.padEnd(6, "0"));
  return formatDatetime(Number(y), Number(mo), Number(d), Number(h), Number(mi), Number(sec), micro);
}

/** {@link tryParseDatetime}, throwing Python's `ValueError` text when `s` is not an ISO datetime. */
export function parseDatetime(s: string): PyDatetime {
  const v = tryParseDatetime(s);
  if (v === undefined) throw new Error(`Invalid isoformat string: '${s}'`);
  return v;
}

/** Python's `date.fromisoformat(s).isoformat()`; `undefined` when invalid. */
export function tryParseDate(s: string): PyDate | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m || !validDate(Number(m[1]), Number(m[2]), Number(m[3]))) return undefined;
  return s;
}

function validDate(y: number, mo: number, d: number): boolean {
  if (y < 1 || mo < 1 || mo > 12 || d < 1) return false;
  return d <= daysInMonth(y, mo);
}

function daysInMonth(y: number, mo: number): number {
  return new Date(Date.UTC(y, mo, 0)).getUTCDate();
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

function formatDatetime(
  y: number,
  mo: number,
  d: number,
  h: number,
  mi: number,
  s: number,
  micro: number,
): string {
  const base = `${pad(y, 4)}-${pad(mo)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(s)}`;
  return micro === 0 ? base : `${base}.${pad(micro, 6)}`;
}

/** The `date()` part of a datetime. */
export function datePart(dt: PyDatetime): PyDate {
  return dt.slice(0, 10);
}

/** The `time().isoformat()` part of a datetime (`HH:MM:SS[.ffffff]`). */
export function timePart(dt: PyDatetime): string {
  return dt.slice(11);
}

/** Microseconds since the epoch of a naive datetime (for differences and additions). */
export function datetimeMicros(dt: PyDatetime): number {
  const m = ISO_DATETIME.exec(dt);
  if (!m) throw new Error(`not a datetime: ${dt}`);
  const [, y, mo, d, h = "0", mi = "0", s = "0", frac = "0"] = m;
  const ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  return ms * 1000 + Number(frac.padEnd(6, "0"));
}

/** A datetime from microseconds since the epoch (inverse of {@link datetimeMicros}). */
export function datetimeFromMicros(us: number): PyDatetime {
  const micro = ((us % 1_000_000) + 1_000_000) % 1_000_000;
  const d = new Date((us - micro) / 1000);
  return formatDatetime(
    d.getUTCFullYear(),
    d.getUTCMonth() + 1,
    d.getUTCDate(),
    d.getUTCHours(),
    d.getUTCMinutes(),
    d.getUTCSeconds(),
    micro,
  );
}

let lastNowMicros = 0;

/**
 * Python's `datetime.datetime.now()` (local wall-clock time, naive, microseconds). JavaScript's clock
 * has millisecond resolution, so two calls within a millisecond are kept strictly increasing (1 µs
 * apart), as Python's microsecond clock practically always is (`check_added_to_file` compares them).
 */
export function pyNow(): PyDatetime {
  const t = new Date();
  const wall = Date.UTC(
    t.getFullYear(),
    t.getMonth(),
    t.getDate(),
    t.getHours(),
    t.getMinutes(),
    t.getSeconds(),
    t.getMilliseconds(),
  );
  lastNowMicros = Math.max(wall * 1000, lastNowMicros + 1);
  return datetimeFromMicros(lastNowMicros);
}

// ---------------------------------------------------------------------------------------------------
// loading from the benchmark data

type Doc = Record<string, unknown>;

class Reader {
  constructor(readonly where: string) {}
  fail(path: string, what: string): never {
    throw new BenchmarkDataError(`AgentDojo benchmark data: ${this.where}: ${path}: ${what}`);
  }
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
    return this.list(v ?? [], path).map((x, i) => this.str(x, `${path}[${i}]`));
  }
  bool(v: unknown, path: string, dflt: boolean): boolean {
    if (v === undefined) return dflt;
    if (typeof v !== "boolean") this.fail(path, "must be a boolean");
    return v;
  }
  datetime(v: unknown, path: string): PyDatetime {
    const s = this.str(v, path);
    return tryParseDatetime(s) ?? this.fail(path, `${JSON.stringify(s)} is not an ISO datetime`);
  }
  oneOf<T extends string>(v: unknown, path: string, values: readonly T[], dflt: T): T {
    if (v === undefined) return dflt;
    const s = this.str(v, path);
    if (!(values as readonly string[]).includes(s)) this.fail(path, `must be one of ${values.join(", ")}`);
    return s as T;
  }
}

/** Builds a `CalendarEvent` from a data record (pydantic's validation of the model). */
function readEvent(r: Reader, raw: unknown, path: string): CalendarEvent {
  const e = r.obj(raw, path);
  const location = e.location === null ? null : r.str(e.location, `${path}.location`);
  return {
    id_: r.str(e.id_, `${path}.id_`),
    title: r.str(e.title, `${path}.title`),
    description: r.str(e.description, `${path}.description`),
    start_time: r.datetime(e.start_time, `${path}.start_time`),
    end_time: r.datetime(e.end_time, `${path}.end_time`),
    location,
    participants: r.strList(e.participants, `${path}.participants`),
    all_day: r.bool(e.all_day, `${path}.all_day`, false),
    status: r.oneOf(e.status, `${path}.status`, ["confirmed", "canceled"] as const, "confirmed"),
  };
}

function readEmail(r: Reader, raw: unknown, path: string): Email {
  const e = r.obj(raw, path);
  const attachments = r
    .list(e.attachments ?? [], `${path}.attachments`)
    .map((a, i) => (typeof a === "string" ? a : readEvent(r, a, `${path}.attachments[${i}]`)));
  return {
    id_: r.str(e.id_, `${path}.id_`),
    sender: r.str(e.sender, `${path}.sender`),
    recipients: r.strList(e.recipients, `${path}.recipients`),
    cc: r.strList(e.cc, `${path}.cc`),
    bcc: r.strList(e.bcc, `${path}.bcc`),
    subject: r.str(e.subject, `${path}.subject`),
    body: r.str(e.body, `${path}.body`),
    status: r.oneOf(e.status, `${path}.status`, ["sent", "received", "draft"] as const, "sent"),
    read: r.bool(e.read, `${path}.read`, false),
    timestamp: r.datetime(e.timestamp, `${path}.timestamp`),
    attachments,
  };
}

function readFile(r: Reader, raw: unknown, path: string): CloudDriveFile {
  const f = r.obj(raw, path);
  const shared = r.obj(f.shared_with ?? {}, `${path}.shared_with`);
  const content = r.str(f.content, `${path}.content`);
  return {
    id_: r.str(f.id_, `${path}.id_`),
    filename: r.str(f.filename, `${path}.filename`),
    content,
    owner: r.str(f.owner, `${path}.owner`),
    last_modified: r.datetime(f.last_modified, `${path}.last_modified`),
    shared_with: new Map(
      Object.entries(shared).map(([k, v]) => [
        k,
        r.oneOf(v, `${path}.shared_with.${k}`, ["r", "rw"] as const, "r"),
      ]),
    ),
    size: codePointLength(content),
  };
}

/** Python's `len(str)`. */
export function codePointLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

function uniqueMap<T extends { id_: string }>(
  r: Reader,
  items: T[],
  path: string,
  kind: string,
): Map<string, T> {
  const out = new Map<string, T>();
  for (const it of items) {
    if (out.has(it.id_)) r.fail(path, `${kind} IDs must be unique. Duplicate: '${it.id_}'`);
    out.set(it.id_, it);
  }
  return out;
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

/**
 * The environment document of the benchmark data with the injections placed (missing vectors get their
 * default), validated into a {@link WorkspaceEnvironment}. Malformed data is a `BenchmarkDataError`
 * naming the field.
 */
export function workspaceEnvironmentFrom(
  data: SuiteData,
  injections: Readonly<Record<string, string>>,
): WorkspaceEnvironment {
  const doc = injectEnvironment(data.environment, data.injectionVectors, injections);
  const r = new Reader(`${data.suite}/environment.yaml`);
  const root = r.obj(doc, "(document)");
  const inbox = r.obj(root.inbox, "inbox");
  const calendar = r.obj(root.calendar, "calendar");
  const drive = r.obj(root.cloud_drive, "cloud_drive");
  const emails = r
    .list(inbox.initial_emails, "inbox.initial_emails")
    .map((e, i) => readEmail(r, e, `inbox.initial_emails[${i}]`));
  const events = r
    .list(calendar.initial_events, "calendar.initial_events")
    .map((e, i) => readEvent(r, e, `calendar.initial_events[${i}]`));
  const files = r
    .list(drive.initial_files, "cloud_drive.initial_files")
    .map((f, i) => readFile(r, f, `cloud_drive.initial_files[${i}]`));
  const currentDay =
    tryParseDate(r.str(calendar.current_day, "calendar.current_day")) ??
    r.fail("calendar.current_day", "must be a date YYYY-MM-DD");
  return {
    inbox: {
      account_email: r.str(inbox.account_email, "inbox.account_email"),
      emails: uniqueMap(r, emails, "inbox.initial_emails", "Email"),
      contact_list: contactListOf(emails),
      trash: new Map(),
    },
    calendar: {
      current_day: currentDay,
      account_email: r.str(calendar.account_email, "calendar.account_email"),
      events: uniqueMap(r, events, "calendar.initial_events", "Event"),
    },
    cloud_drive: {
      account_email: r.str(drive.account_email, "cloud_drive.account_email"),
      files: uniqueMap(r, files, "cloud_drive.initial_files", "File"),
    },
  };
}
