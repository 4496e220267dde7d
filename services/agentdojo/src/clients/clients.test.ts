/**
 * The shared email and calendar clients: each suite's subset is the one implementation, the data
 * reader reports through the suite's `fail`, and the DeepDiff stand-in's rules both suites rely on.
 * (The tools' behaviour is tested through the suites: `workspace-tools.test.ts`, `travel*.test.ts`.)
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseDataDatetime } from "../py/pydatetime.js";
import { TRAVEL_TOOLS } from "../suites/travel/tools.js";
import { WORKSPACE_TOOLS } from "../suites/workspace/tools.js";
import { CALENDAR_TOOLS, calendarTools } from "./calendar-tools.js";
import { deepDiff, environmentsEqual } from "./deep-diff.js";
import { EMAIL_TOOLS, emailTools } from "./email-tools.js";
import { Reader, readCalendar, readInbox } from "./environment.js";
import { nextId, sendEmail } from "./models.js";

const reader = () =>
  new Reader((path, what) => {
    throw new Error(`${path}: ${what}`);
  });

const email = (id_: string, sender: string) => ({
  id_,
  sender,
  recipients: ["emma.johnson@bluesparrowtech.com"],
  subject: "s",
  body: "b",
  timestamp: "2024-05-14 11:00",
});

describe("email and calendar clients", () => {
  it("both suites expose the same tool objects; travel's subset in its own order", () => {
    const shared = new Set<unknown>([...EMAIL_TOOLS, ...CALENDAR_TOOLS]);
    assert.deepEqual(
      WORKSPACE_TOOLS.filter((t) => shared.has(t)).map((t) => t.name),
      [...EMAIL_TOOLS, ...CALENDAR_TOOLS].map((t) => t.name),
    );
    assert.deepEqual(
      TRAVEL_TOOLS.filter((t) => shared.has(t)).map((t) => t.name),
      [
        "create_calendar_event",
        "search_calendar_events",
        "get_day_calendar_events",
        "cancel_calendar_event",
        "send_email",
      ],
    );
    assert.throws(() => calendarTools(["send_email"]), /no calendar tool named "send_email"/);
    assert.throws(() => emailTools(["get_current_day"]), /no email tool named "get_current_day"/);
  });

  it("reads an inbox and a calendar: dict order kept, contacts derived, bad data named", () => {
    const r = reader();
    const inbox = readInbox(
      r,
      {
        account_email: "emma.johnson@bluesparrowtech.com",
        initial_emails: [email("10", "a.b@x.com"), email("9", "c@x.com")],
      },
      "inbox",
    );
    assert.deepEqual([...inbox.emails.keys()], ["10", "9"]);
    assert.equal(inbox.emails.get("9")!.timestamp, "2024-05-14T11:00:00");
    assert.deepEqual(inbox.contact_list[1], { email: "a.b@x.com", name: "A B" });
    assert.equal(nextId(inbox.emails.keys()), "11");
    const sent = sendEmail(inbox, ["Jay <JAY@Google.com>"], "s", "b");
    assert.equal(sent.id_, "11");
    assert.deepEqual(sent.recipients, ["JAY@google.com"]);
    assert.throws(
      () =>
        readInbox(
          r,
          { account_email: "e@x.com", initial_emails: [email("1", "a@x.com"), email("1", "b@x.com")] },
          "inbox",
        ),
      /^Error: inbox\.initial_emails: Email IDs must be unique\. Duplicate: '1'$/,
    );
    assert.throws(
      () =>
        readInbox(
          r,
          { account_email: "e@x.com", initial_emails: [{ ...email("1", "a@x.com"), recipients: undefined }] },
          "inbox",
        ),
      /^Error: inbox\.initial_emails\[0\]\.recipients: must be a list$/,
    );
    assert.throws(
      () =>
        readCalendar(
          r,
          { account_email: "e@x.com", current_day: "2024-02-30", initial_events: [] },
          "calendar",
        ),
      /^Error: calendar\.current_day: must be a date YYYY-MM-DD$/,
    );
  });

  it("pydantic datetimes need at least HH:MM after the date", () => {
    assert.equal(parseDataDatetime("2024-05-15 10:00"), "2024-05-15T10:00:00");
    assert.equal(parseDataDatetime("2024-05-15"), "2024-05-15T00:00:00");
    assert.equal(parseDataDatetime("2024-05-15 10"), undefined);
    assert.equal(parseDataDatetime("2024-05-15T10"), undefined);
  });

  it("DeepDiff: Map keys, model attributes, list items; a number is one type", () => {
    const pre = { calendar: { events: new Map([["1", { participants: ["a"] }]]) }, rating: 5, note: null };
    const post = {
      calendar: {
        events: new Map([
          ["1", { participants: ["a", "b"] }],
          ["2", { participants: [] }],
        ]),
      },
      rating: 5.5,
      note: "x",
    };
    assert.deepEqual(deepDiff(pre, post), {
      dictionary_item_added: ["root.calendar.events['2']"],
      iterable_item_added: ["root.calendar.events['1'].participants[1]"],
      values_changed: ["root.rating"],
      type_changes: ["root.note"],
    });
    assert.equal(environmentsEqual(pre, structuredClone(pre)), true);
    assert.equal(environmentsEqual(pre, post), false);
  });
});
