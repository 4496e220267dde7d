/**
 * The workspace environment (AgentDojo `WorkspaceEnvironment`: an inbox, a calendar and a cloud drive),
 * built from the benchmark's `workspace/environment.yaml` at run time. Field names are the Python ones.
 * The inbox and the calendar are the shared clients' (`../../clients/`: models, representation and data
 * reading); the cloud drive is this suite's own, represented the same way (a Python `dict` is a `Map`, a
 * pydantic model a plain object, a `datetime` its `isoformat()` text; `initial_*` fields are not kept).
 * @module
 */
import { BenchmarkDataError, injectEnvironment, type SuiteData } from "../../benchmark-data.js";
import { Reader, readCalendar, readInbox } from "../../clients/environment.js";
import type { Calendar, Inbox, PyDatetime } from "../../clients/models.js";

export type {
  Calendar,
  CalendarEvent,
  Email,
  EmailContact,
  EmailStatus,
  EventStatus,
  Inbox,
  PyDate,
  PyDatetime,
} from "../../clients/models.js";

/** `types.SharingPermission`. */
export type SharingPermission = "r" | "rw";

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
// `parse_datetime` of the task files

const ISO_DATETIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,6}))?)?)?$/;

/**
 * Python's `datetime.fromisoformat(s).isoformat()` for naive datetimes (what `parse_datetime` in the
 * task files accepts: `YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]]`). Returns `undefined` when `s` is not
 * such a datetime or names an impossible date or time.
 */
export function tryParseDatetime(s: string): PyDatetime | undefined {
  const m = ISO_DATETIME.exec(s);
  if (!m) return undefined;
  const [, y, mo, d, h = "00", mi = "00", sec = "00", frac] = m;
  if (!validDate(Number(y), Number(mo), Number(d))) return undefined;
  if (Number(h) > 23 || Number(mi) > 59 || Number(sec) > 59) return undefined;
  const micro = frac === undefined ? 0 : Number(frac.padEnd(6, "0"));
  const base = `${y}-${mo}-${d}T${h}:${mi}:${sec}`;
  return micro === 0 ? base : `${base}.${pad(micro, 6)}`;
}

/** {@link tryParseDatetime}, throwing Python's `ValueError` text when `s` is not an ISO datetime. */
export function parseDatetime(s: string): PyDatetime {
  const v = tryParseDatetime(s);
  if (v === undefined) throw new Error(`Invalid isoformat string: '${s}'`);
  return v;
}

function validDate(y: number, mo: number, d: number): boolean {
  if (y < 1 || mo < 1 || mo > 12 || d < 1) return false;
  return d <= new Date(Date.UTC(y, mo, 0)).getUTCDate();
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

// ---------------------------------------------------------------------------------------------------
// loading from the benchmark data

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
  const where = `${data.suite}/environment.yaml`;
  const r = new Reader((path, what) => {
    throw new BenchmarkDataError(`AgentDojo benchmark data: ${where}: ${path}: ${what}`);
  });
  const root = r.obj(doc, "(document)");
  const inbox = readInbox(r, root.inbox, "inbox");
  const calendar = readCalendar(r, root.calendar, "calendar");
  const drive = r.obj(root.cloud_drive, "cloud_drive");
  const files = r
    .list(drive.initial_files, "cloud_drive.initial_files")
    .map((f, i) => readFile(r, f, `cloud_drive.initial_files[${i}]`));
  return {
    inbox,
    calendar,
    cloud_drive: {
      account_email: r.str(drive.account_email, "cloud_drive.account_email"),
      files: r.byId(files, "cloud_drive.initial_files", "File"),
    },
  };
}
