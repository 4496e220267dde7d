/**
 * Pins of upstream behaviour found by checking the travel suite against AgentDojo 96046ab54a99
 * (package 0.1.34) and its pinned libraries: pydantic's `EmailStr` (expected values taken from
 * pydantic 2.13 + email-validator 2.3 run on the same inputs), `datetime.strptime`'s regexes, the
 * `Email` / `CalendarEvent` models' error lists and `str()` of a non-string attachment id.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { openBenchmarkData } from "../../benchmark-data.js";
import { runFunction } from "../../runtime.js";
import type { AnySuite } from "../../suite.js";
import { BENCHMARK_DATA_DIR, BENCHMARK_DATA_SKIP } from "../../../test/benchmark-data-dir.js";
import { checkEmailStr } from "../../py/email-address.js";
import { buildTravelSuite, type TravelEnvironment } from "./index.js";
import { strptimeDay, strptimeMinutes } from "../../py/pydatetime.js";

const skip = BENCHMARK_DATA_SKIP;
const suite = BENCHMARK_DATA_DIR
  ? (buildTravelSuite(openBenchmarkData(BENCHMARK_DATA_DIR).suite("travel")) as unknown as AnySuite)
  : undefined;
const env = () => suite!.loadEnvironment({}) as TravelEnvironment;
const run = (e: TravelEnvironment, fn: string, args: Record<string, unknown>) =>
  runFunction(suite!, e, fn, args);

/** input → normalised address, or `!reason`. */
const EMAIL_STR: readonly [string, string][] = [
  ["janeLong@Google.COM", "janeLong@google.com"],
  [" jay@google.com ", "jay@google.com"],
  ["Jay Long <jay@google.com>", "jay@google.com"],
  ['"Jay Long" <jay@google.com>', "jay@google.com"],
  ["Support@Example.com", "support@example.com"],
  ["j+a@x.io", "j+a@x.io"],
  ["jÄy@google.com", "jÄy@google.com"],
  ["jay@x.c0m", "jay@x.c0m"],
  ["", "!An email address must have an @-sign."],
  ["@google.com", "!There must be something before the @-sign."],
  ["jay@", "!There must be something after the @-sign."],
  ["jay@google", "!The part after the @-sign is not valid. It should have a period."],
  ["a@b@c.com", "!The part after the @-sign contains invalid characters: '@'."],
  ["jay @google.com", "!The email address contains invalid characters before the @-sign: SPACE."],
  ["jay\t@x.com", "!The email address contains invalid characters before the @-sign: U+0009."],
  ["jay(x)@google.com", "!The email address contains invalid characters before the @-sign: '(', ')'."],
  ["a..b@x.com", "!An email address cannot have two periods in a row."],
  [".a@x.com", "!An email address cannot start with a period."],
  ["a.@x.com", "!An email address cannot have a period immediately before the @-sign."],
  ["jay@google.com.", "!An email address cannot end with a period."],
  ["jay@-google.com", "!An email address cannot have a hyphen immediately after the @-sign."],
  [
    "jay@x.test",
    "!The part after the @-sign is a special-use or reserved name that cannot be used with email.",
  ],
  ["jay@x.123", "!The part after the @-sign is not valid. It is not within a valid top-level domain."],
  ["jay@[1.2.3.4]", "!A bracketed IP address after the @-sign is not allowed here."],
  ['"jay"@google.com', "!Quoting the part before the @-sign is not allowed here."],
  ["jay@g_oo.com", "!The part after the @-sign contains invalid characters: '_'."],
  [
    "jay<x@y.com",
    "!An open angle bracket at the start of the email address has to be followed by a close angle bracket at the end.",
  ],
];

describe("travel upstream pins: EmailStr", () => {
  for (const [input, want] of EMAIL_STR)
    it(`${JSON.stringify(input)} → ${want}`, () => {
      const r = checkEmailStr(input);
      assert.equal(r.ok ? r.value : `!${r.reason}`, want);
    });
});

describe("travel upstream pins: strptime", () => {
  it("follows _strptime's regexes: 1-digit fields, whitespace runs, leftovers", () => {
    assert.equal(strptimeMinutes("2024-5-1 9:5"), "2024-05-01T09:05:00");
    assert.equal(strptimeMinutes("2024-05-01   10:00"), "2024-05-01T10:00:00");
    assert.equal(strptimeMinutes("2024-05- 1 10:00"), "2024-05-01T10:00:00");
    const err = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return (e as Error).message;
      }
      return "no error";
    };
    // %M matches "6", leaving "0"; %d matches "3", leaving "2".
    assert.equal(
      err(() => strptimeMinutes("2024-05-01 10:60")),
      "unconverted data remains: 0",
    );
    assert.equal(
      err(() => strptimeDay("2024-05-32")),
      "unconverted data remains: 2",
    );
    assert.equal(
      err(() => strptimeMinutes("2024-05-01 24:00")),
      "time data '2024-05-01 24:00' does not match format '%Y-%m-%d %H:%M'",
    );
    assert.equal(
      err(() => strptimeMinutes("2024-02-30 10:00")),
      "day is out of range for month",
    );
  });
});

describe("travel upstream pins: send_email and CalendarEvent validation", () => {
  it("one ValidationError lists every bad recipient, cc and bcc; addresses are normalised", { skip }, () => {
    const e = env();
    assert.equal(
      run(e, "send_email", { recipients: ["jay"], subject: "s", body: "b", cc: ["a@b.com", "x@y"], bcc: [] })
        .error,
      "ValidationError: 2 validation errors for Email\nrecipients.0\n  value is not a valid email address: An email address must have an @-sign. [type=value_error, input_value='jay', input_type=str]\ncc.1\n  value is not a valid email address: The part after the @-sign is not valid. It should have a period. [type=value_error, input_value='x@y', input_type=str]",
    );
    const sent = run(e, "send_email", { recipients: ["Jay <JAY@Google.com>"], subject: "s", body: "b" });
    assert.equal(sent.error, "");
    assert.match(sent.output, /\nrecipients:\n- JAY@google\.com\n/);
  });

  it("a file attachment id is str() of what was sent", { skip }, () => {
    const e = env();
    const out = run(e, "send_email", {
      recipients: ["a@b.com"],
      subject: "s",
      body: "b",
      attachments: [
        { type: "file", file_id: 7 },
        { type: "file", file_id: true },
      ],
    }).output;
    assert.match(out, /^attachments:\n- '7'\n- 'True'\n/);
  });

  it("event_details errors come in the model's field order, participants item by item", { skip }, () => {
    const e = env();
    const error = run(e, "send_email", {
      recipients: ["a@b.com"],
      subject: "s",
      body: "b",
      attachments: [
        {
          type: "event",
          event_details: {
            id_: 1,
            title: "t",
            start_time: "2024-05-01 10:00",
            end_time: "2024-05-01 11:00",
            location: 3,
            participants: ["a", 5],
            all_day: "maybe",
          },
        },
      ],
    }).error;
    const locs = error
      .split("\n")
      .slice(1)
      .filter((l) => !l.startsWith("  "));
    assert.match(error, /^ValidationError: 6 validation errors for CalendarEvent\n/);
    assert.deepEqual(locs, ["id_", "description", "location", "participants.0", "participants.1", "all_day"]);
    assert.match(
      error,
      /participants\.1\n {2}Input should be a valid string \[type=string_type, input_value=5/,
    );
    assert.match(
      error,
      /all_day\n {2}Input should be a valid boolean, unable to interpret input \[type=bool_parsing/,
    );
  });
});
