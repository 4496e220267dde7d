/**
 * The 24 workspace tools against upstream's Python: argument validation, `ValueError`s, effects on the
 * environment, and the YAML AgentDojo shows (checked against PyYAML 6 reference output). Most tests
 * need the benchmark data (`AGENTDOJO_DATA_DIR`) and skip without it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { safeDump } from "../../pyyaml.js";
import { PyTemporal } from "../../render.js";
import { deepDiff } from "../../clients/deep-diff.js";
import { parseDatetime } from "./environment.js";
import { EMMA, fresh, ofStatus, run, skip } from "./workspace-test-support.js";

describe("workspace tools: validation, errors, effects, rendering", () => {
  it("validates arguments like pydantic (missing, wrong type, enum, null for optional lists)", {
    skip,
  }, () => {
    const env = fresh();
    assert.match(
      run(env, "send_email", { subject: "s", body: "b" }).error,
      /^ValidationError: 1 validation error for Input schema for `send_email`\nrecipients\n {2}Field required/,
    );
    assert.match(
      run(env, "send_email", { recipients: "a@b.com", subject: "s", body: "b" }).error,
      /Input should be a valid list \[type=list_type/,
    );
    assert.match(
      run(env, "share_file", { file_id: "0", email: "a@b.com", permission: "w" }).error,
      /Input should be 'r' or 'rw' \[type=enum/,
    );
    assert.equal(
      run(env, "send_email", {
        recipients: ["a@b.com"],
        subject: "s",
        body: "b",
        cc: null,
        attachments: null,
      }).error,
      "",
    );
    assert.match(
      run(env, "no_such_tool").error,
      /^ToolNotFoundError: The requested function `no_such_tool` is not available\.$/,
    );
  });

  it("raises upstream's ValueErrors", { skip }, () => {
    const env = fresh();
    const err = (fn: string, args: Record<string, unknown>) => run(env, fn, args).error;
    assert.equal(err("delete_email", { email_id: "999" }), "ValueError: Email with ID '999' not found.");
    assert.equal(
      err("search_emails", { query: "zzzz-nothing" }),
      "ValueError: No emails found. Try with a different query.",
    );
    assert.equal(
      err("search_contacts_by_name", { query: "Zorro" }),
      "ValueError: Contact with name 'Zorro' not found.",
    );
    assert.equal(
      err("search_contacts_by_email", { query: "zz@" }),
      "ValueError: Contact with email 'zz@' not found.",
    );
    assert.equal(
      err("search_calendar_events", { query: "zzzz" }),
      "ValueError: No events found. Try with a different query.",
    );
    assert.equal(
      err("cancel_calendar_event", { event_id: "999" }),
      "ValueError: Event with ID '999' not found.",
    );
    assert.equal(err("get_file_by_id", { file_id: "999" }), "ValueError: File with ID '999' not found.");
    assert.equal(
      err("search_files", { query: "zzzz" }),
      "ValueError: No files found with the given query ('zzzz'). Try a different search term.",
    );
    assert.equal(
      err("get_day_calendar_events", { day: "15/05/2024" }),
      "ValueError: time data '15/05/2024' does not match format '%Y-%m-%d'",
    );
    assert.equal(
      err("create_calendar_event", {
        title: "t",
        start_time: "2024-05-15T10:00",
        end_time: "2024-05-15 11:00",
      }),
      "ValueError: time data '2024-05-15T10:00' does not match format '%Y-%m-%d %H:%M'",
    );
    assert.equal(
      err("reschedule_calendar_event", { event_id: "6", new_start_time: "2024-05-15 10:00:00" }),
      "ValueError: unconverted data remains: :00",
    );
    assert.equal(
      err("get_day_calendar_events", { day: "2024-02-30" }),
      "ValueError: day is out of range for month",
    );
    const mail = (attachments: unknown[]) =>
      err("send_email", { recipients: ["a@b.com"], subject: "s", body: "b", attachments });
    assert.equal(mail([{ file_id: "1" }]), "ValueError: Attachment must have a 'type' field.");
    assert.equal(
      mail([{ type: "file" }]),
      "ValueError: Attachment of type 'file' must have a 'file_id' field.",
    );
    assert.equal(
      mail([{ type: "event" }]),
      "ValueError: Attachment of type 'event' must have an 'event_details' field.",
    );
    assert.match(
      mail([{ type: "event", event_details: { title: "x" } }]),
      /^ValidationError: \d+ validation errors for CalendarEvent\nid_\n {2}Field required/,
    );
    assert.match(
      err("send_email", { recipients: ["bob"], subject: "s", body: "b" }),
      /^ValidationError: 1 validation error for Email\nrecipients\.0\n {2}value is not a valid email address: An email address must have an @-sign\./,
    );
    assert.equal(env.inbox.emails.size, 31, "failed calls change nothing");
  });

  it("EmailStr, strptime (shared ports of email-validator, _strptime) and a lax all_day", { skip }, () => {
    const env = fresh();
    const send = (recipients: string[]) => run(env, "send_email", { recipients, subject: "s", body: "b" });
    // email-validator checks the local part and the domain, not only the @-sign.
    const bad: [string, string][] = [
      ["a..b@x.com", "An email address cannot have two periods in a row."],
      ["a@b@c.com", "The part after the @-sign contains invalid characters: '@'."],
      [
        "jay@x.test",
        "The part after the @-sign is a special-use or reserved name that cannot be used with email.",
      ],
      ["jay @google.com", "The email address contains invalid characters before the @-sign: SPACE."],
    ];
    for (const [address, reason] of bad)
      assert.equal(
        send([address]).error,
        `ValidationError: 1 validation error for Email\nrecipients.0\n  value is not a valid email address: ${reason} [type=value_error, input_value='${address}', input_type=str]`,
      );
    assert.equal(env.inbox.emails.size, 31, "refused addresses send nothing");
    // Role mailboxes are lower-cased, domains too; a display name is dropped.
    assert.equal(send(["Support@Example.com", "Jay <jay@Google.com>"]).error, "");
    assert.deepEqual([...env.inbox.emails.values()].at(-1)?.recipients, [
      "support@example.com",
      "jay@google.com",
    ]);
    const created = run(env, "create_calendar_event", {
      title: "t",
      start_time: "2024-5-6 9:5",
      end_time: "2024-05-06 10:00",
      participants: ["Support@Example.com"],
    });
    assert.equal(created.error, "");
    const event = [...env.calendar.events.values()].at(-1)!;
    assert.equal(event.start_time, "2024-05-06T09:05:00");
    assert.ok(event.participants.includes("support@example.com"));
    // CalendarEvent(**event_details): `all_day` is a lax pydantic bool.
    const details = (all_day: unknown) => ({
      id_: "x",
      title: "t",
      description: "d",
      start_time: "2024-05-06 10:00",
      end_time: "2024-05-06T11:00:00",
      location: null,
      participants: [],
      all_day,
    });
    const attach = (all_day: unknown) =>
      run(env, "send_email", {
        recipients: [EMMA],
        subject: "s",
        body: "b",
        attachments: [{ type: "event", event_details: details(all_day) }],
      });
    assert.equal(attach("yes").error, "");
    assert.deepEqual(
      [...env.inbox.emails.values()].at(-1)?.attachments.map((a) => typeof a !== "string" && a.all_day),
      [true],
    );
    assert.equal(attach(0).error, "");
    assert.equal(
      attach("maybe").error,
      "ValidationError: 1 validation error for CalendarEvent\nall_day\n  Input should be a valid boolean, unable to interpret input [type=bool_parsing, input_value='maybe', input_type=str]",
    );
    assert.equal(
      run(env, "get_day_calendar_events", { day: "0000-01-01" }).error,
      "ValueError: year 0 is out of range",
    );
    assert.equal(
      run(env, "search_calendar_events", { query: "x", date: "2024-05-32" }).error,
      "ValueError: unconverted data remains: 2",
    );
  });

  it("send_email: id max+1, sender, sent/read, attachments; YAML with sorted keys and PyYAML datetimes", {
    skip,
  }, () => {
    const env = fresh();
    const out = run(env, "send_email", {
      recipients: ["Mark@Example.COM"],
      subject: "Hi",
      body: "Hello",
      attachments: [
        { type: "file", file_id: 3 },
        {
          type: "event",
          event_details: {
            id_: "e",
            title: "T",
            description: "",
            start_time: "2024-05-15 10:00",
            end_time: "2024-05-15T11:00:00",
            location: null,
            participants: [EMMA],
          },
        },
      ],
    }).output;
    const email = env.inbox.emails.get("34")!;
    assert.equal(email.sender, EMMA);
    assert.deepEqual(email.recipients, ["Mark@example.com"], "EmailStr lower-cases the domain");
    run(env, "send_email", { recipients: ["Mark Black <m@X.org> ", " a@b.com"], subject: "s", body: "b" });
    assert.deepEqual(
      env.inbox.emails.get("35")!.recipients,
      ["m@x.org", "a@b.com"],
      "pydantic keeps the address of `Name <address>`",
    );
    assert.equal(email.status, "sent");
    assert.equal(email.read, true);
    assert.equal(email.attachments[0], "3");
    assert.match(email.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?$/);
    assert.match(
      out,
      /^attachments:\n- '3'\n- all_day: false\n {2}description: ''\n {2}end_time: 2024-05-15 11:00:00\n {2}id_: e\n {2}location: null\n {2}participants:\n {2}- emma\.johnson@bluesparrowtech\.com\n {2}start_time: 2024-05-15 10:00:00\n {2}status: confirmed\n {2}title: T\nbcc: \[\]\nbody: Hello\ncc: \[\]\nid_: '34'\nread: true\nrecipients:\n- Mark@example\.com\nsender: emma\.johnson@bluesparrowtech\.com\nstatus: sent\nsubject: Hi\ntimestamp: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d/,
    );
  });

  it("email reads: unread marks read, received/sent/draft by status, search by sender (any case), contacts", {
    skip,
  }, () => {
    const env = fresh();
    const first = run(env, "get_unread_emails").output;
    assert.equal((first.match(/^- attachments:/gm) ?? []).length, 6);
    assert.equal(run(env, "get_unread_emails").output, "[]");
    assert.match(first, /^ {2}timestamp: 2024-\d\d-\d\d \d\d:\d\d:\d\d$/m);
    assert.equal(run(env, "get_draft_emails").output, "[]");
    const received = run(env, "get_received_emails").output;
    assert.equal((received.match(/^- attachments:/gm) ?? []).length, ofStatus(env, "received").length);
    const lily = run(env, "search_emails", { query: "", sender: "LILY.WHITE@gmail.com" }).output;
    assert.match(lily, /subject: Birthday Party/);
    assert.equal((lily.match(/^- attachments:/gm) ?? []).length, 1);
    assert.equal(
      run(env, "search_contacts_by_name", { query: "lily" }).output,
      "- email: lily.white@gmail.com\n  name: Lily White",
    );
    const del = run(env, "delete_email", { email_id: "0" });
    assert.equal(del.output, "Email with id 0 deleted successfully.");
    assert.deepEqual([...env.inbox.trash.keys()], ["0"]);
    assert.equal(env.inbox.emails.has("0"), false);
  });

  it("create_calendar_event: the account is appended to the participants and invited too", { skip }, () => {
    const env = fresh();
    const out = run(env, "create_calendar_event", {
      title: "Sync",
      start_time: "2024-05-20 9:5",
      end_time: "2024-05-20 10:30",
      participants: ["a@b.com", EMMA],
    }).output;
    const ev = env.calendar.events.get("27")!;
    assert.deepEqual(
      [ev.start_time, ev.end_time, ev.description, ev.location],
      ["2024-05-20T09:05:00", "2024-05-20T10:30:00", "", null],
    );
    assert.deepEqual(ev.participants, ["a@b.com", EMMA]);
    const invite = env.inbox.emails.get("34")!;
    assert.deepEqual(
      invite.recipients,
      ["a@b.com", EMMA, EMMA],
      "upstream sends to the list the account was appended to",
    );
    assert.equal(invite.subject, "Invitation: Sync");
    assert.equal(invite.attachments[0], ev, "the attachment is the calendar's own event");
    assert.match(
      out,
      /^all_day: false\ndescription: ''\nend_time: 2024-05-20 10:30:00\nid_: '27'\nlocation: null\n/,
    );
    assert.deepEqual(deepDiff(fresh(), env), {
      dictionary_item_added: ["root.inbox.emails['34']", "root.calendar.events['27']"],
    });
  });

  it("reschedule keeps the duration and mails the literal '{event.title}' subject; cancel and add participants", {
    skip,
  }, () => {
    const env = fresh();
    run(env, "reschedule_calendar_event", { event_id: "6", new_start_time: "2024-05-31 23:30" });
    const ev = env.calendar.events.get("6")!;
    assert.deepEqual([ev.start_time, ev.end_time], ["2024-05-31T23:30:00", "2024-06-01T00:30:00"]);
    const mail = env.inbox.emails.get("34")!;
    assert.equal(mail.subject, "Rescheduled: '{event.title}'");
    assert.equal(
      mail.body,
      "The event has been rescheduled. It will start on  2024-05-31 at 23:30:00 and end on 2024-06-01 at 00:30:00.",
    );
    assert.deepEqual(mail.recipients, ev.participants);
    assert.equal(
      run(env, "cancel_calendar_event", { event_id: "6" }).output,
      "Event with ID 6 has been canceled and participants have been notified.",
    );
    assert.equal(ev.status, "canceled");
    assert.equal(env.inbox.emails.get("35")!.subject, "Canceled: 'Team Sync'");
    assert.match(
      run(env, "add_calendar_event_participants", { event_id: "6", participants: ["not-an-email"] }).output,
      /- not-an-email\n/,
    );
    assert.equal(env.inbox.emails.size, 33, "adding participants sends nothing");
    assert.equal(run(env, "get_current_day").output, "2024-05-15");
    assert.equal(run(env, "get_day_calendar_events", { day: "2024-01-01" }).output, "[]");
    assert.match(
      run(env, "search_calendar_events", { query: "lunch", date: "2024-05-15" }).output,
      /^- all_day: false\n {2}description: Catch up over lunch\.\n {2}end_time: 2024-05-15 13:30:00\n/,
    );
  });

  it("drive: create, append (size, time), share, delete, searches", { skip }, () => {
    const env = fresh();
    const created = run(env, "create_file", { filename: "notes.txt", content: "héllo" }).output;
    assert.match(
      created,
      /^content: "h\\xE9llo"\nfilename: notes\.txt\nid_: '26'\nlast_modified: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?\nowner: emma\.johnson@bluesparrowtech\.com\nshared_with: \{\}\nsize: 5$/,
    );
    const before = structuredClone(env);
    run(env, "append_to_file", { file_id: "26", content: " 👋" });
    assert.equal(env.cloud_drive.files.get("26")!.size, 7, "size counts code points");
    assert.deepEqual(deepDiff(before, env), {
      values_changed: [
        "root.cloud_drive.files['26'].content",
        "root.cloud_drive.files['26'].last_modified",
        "root.cloud_drive.files['26'].size",
      ],
    });
    assert.match(
      run(env, "share_file", { file_id: "26", email: "x@y.com", permission: "rw" }).output,
      /shared_with:\n {2}x@y\.com: rw\n/,
    );
    assert.equal(
      run(env, "search_files_by_filename", { filename: "NOTES" }).output.startsWith(
        '- content: "h\\xE9llo \\U0001F44B"',
      ),
      true,
    );
    assert.equal(run(env, "search_files_by_filename", { filename: "zzz" }).output, "[]");
    assert.equal((run(env, "list_files").output.match(/^- content:/gm) ?? []).length, 27);
    assert.match(run(env, "delete_file", { file_id: "26" }).output, /^content: "h\\xE9llo \\U0001F44B"\n/);
    assert.equal(env.cloud_drive.files.has("26"), false);
    assert.match(run(env, "search_files", { query: "TEAM BUILDING" }).output, /^- content:/);
  });

  it("prints what yaml.safe_dump prints (reference output of PyYAML 6)", () => {
    const doc = {
      body: "Hi Emma,\n\nI'm planning a party next weekend: it's at our place, starting at 6 PM. Let me know if you can make it!\n\nBest,\nLily",
      content:
        "name,rating\nJohn,3,Amazing product, but I felt that there could be improvements in customer service.\n",
      note: "caf\u00e9 \u2013 d\u00e9j\u00e0 vu \u{1F44B}\ttab",
      long: "Join us for a relaxing yoga class and sports activities to boost your energy and health. Don't miss it: #1 class",
      empty: "",
      num: "2024",
      flag: "yes",
      time: new PyTemporal("2024-05-15 10:00:00"),
      shared_with: { "z@y.com": "rw", "a@b.com": "r" },
      list: ["- dash", "? q", "plain"],
      none: null,
    };
    assert.equal(
      safeDump([doc]),
      "- body: 'Hi Emma,\n\n\n    I''m planning a party next weekend: it''s at our place, starting at 6 PM. Let\n    me know if you can make it!\n\n\n    Best,\n\n    Lily'\n  content: 'name,rating\n\n    John,3,Amazing product, but I felt that there could be improvements in customer\n    service.\n\n    '\n  empty: ''\n  flag: 'yes'\n  list:\n  - '- dash'\n  - '? q'\n  - plain\n  long: 'Join us for a relaxing yoga class and sports activities to boost your energy\n    and health. Don''t miss it: #1 class'\n  none: null\n  note: \"caf\\xE9 \\u2013 d\\xE9j\\xE0 vu \\U0001F44B\\ttab\"\n  num: '2024'\n  shared_with:\n    a@b.com: r\n    z@y.com: rw\n  time: 2024-05-15 10:00:00",
    );
    assert.equal(
      safeDump({
        d: "Click\there to reset your password: https://www.password-reset-12bh12.com and do it now please, it is urgent \u2014 really",
        k: " lead",
      }),
      "d: \"Click\\there to reset your password: https://www.password-reset-12bh12.com and\\\n  \\ do it now please, it is urgent \\u2014 really\"\nk: ' lead'",
    );
    assert.equal(safeDump([]), "[]");
    assert.equal(safeDump({ a: [], b: {} }), "a: []\nb: {}");
  });

  it("parses datetimes like datetime.fromisoformat", () => {
    assert.equal(parseDatetime("2024-05-19 10:00"), "2024-05-19T10:00:00");
    assert.equal(parseDatetime("2024-05-19T10:00:01.5"), "2024-05-19T10:00:01.500000");
    assert.throws(() => parseDatetime("2024-05-19 25:00"), /Invalid isoformat string/);
  });
});
