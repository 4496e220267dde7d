/**
 * The calendar tools (`default_suites/v1/tools/calendar_client.py`) with upstream's behaviour:
 * times are parsed with `strptime("%Y-%m-%d %H:%M")` (days with `"%Y-%m-%d"`) and a mismatch is
 * Python's `ValueError` (`py/pydatetime.ts`'s port of `_strptime`); creating, cancelling and
 * rescheduling an event each send an email from the account with the event attached (the calendar's
 * own event object, so later changes show in it); `create_calendar_event` appends the account's address
 * to the caller's participants, so the invitation goes to them plus the account (twice if already
 * listed), while the event keeps each address once (upstream's `list(set(...))`, whose order is
 * Python's hash-randomised set order and so not reproducible; here first-occurrence order); the
 * reschedule email's subject is the literal `Rescheduled: '{event.title}'` (upstream forgot the `f`);
 * `add_calendar_event_participants` adds addresses unchecked and sends nothing. A suite exposes the
 * subset it lists ({@link calendarTools}).
 * @module
 */
import {
  datetimeFromMicros,
  datetimeMicros,
  dateOf,
  strptimeDay,
  strptimeMinutes,
  timePart,
} from "../py/pydatetime.js";
import { type Tool, ToolError } from "../suite.js";
import {
  type Calendar,
  type CalendarEvent,
  eventDump,
  eventsOnDay,
  type Inbox,
  nextId,
  searchEvents,
  sendEmail,
  showYaml,
  validateParticipants,
} from "./models.js";

/** What the calendar tools need of an environment. */
export interface CalendarEnvironment {
  readonly inbox: Inbox;
  readonly calendar: Calendar;
}

type T = Tool<CalendarEnvironment>;
const str = (v: unknown) => v as string;

function eventOrFail(calendar: Calendar, id: string): CalendarEvent {
  const e = calendar.events.get(id);
  if (e === undefined) throw new ToolError("ValueError", `Event with ID '${id}' not found.`);
  return e;
}

/** Every calendar tool, in AgentDojo's order. */
export const CALENDAR_TOOLS: readonly T[] = [
  {
    name: "get_current_day",
    description: "Returns the current day in ISO format, e.g. '2022-01-01'.",
    parameters: [],
    run: (env) => env.calendar.current_day,
  },
  {
    name: "search_calendar_events",
    description:
      "Searches calendar events that match the given query in the tile or the description. If provided, filters events by date.",
    parameters: [
      {
        name: "query",
        type: "string",
        description: "The query string to search for in event titles and descriptions.",
        required: true,
      },
      {
        name: "date",
        type: "string",
        description:
          "The date for which to search events. Must be in format YYYY-MM-DD. If `null`, searches all events.",
        required: false,
        nullable: true,
        default: null,
      },
    ],
    run: (env, a) => {
      const day = a.date === null ? null : strptimeDay(str(a.date));
      const matches = searchEvents(env.calendar, str(a.query), day);
      if (matches.length === 0)
        throw new ToolError("ValueError", "No events found. Try with a different query.");
      return showYaml(matches.map(eventDump));
    },
  },
  {
    name: "get_day_calendar_events",
    description:
      "Returns the appointments for the given `day`. Returns a list of dictionaries with informations about each meeting.",
    parameters: [
      {
        name: "day",
        type: "string",
        description: "The day for which to return the appointments. Must be in format YYYY-MM-DD.",
        required: true,
      },
    ],
    run: (env, a) => showYaml(eventsOnDay(env.calendar, strptimeDay(str(a.day))).map(eventDump)),
  },
  {
    name: "create_calendar_event",
    description: "Creates a new calendar event with the given details and adds it to the calendar.",
    parameters: [
      { name: "title", type: "string", description: "The title of the event.", required: true },
      {
        name: "start_time",
        type: "string",
        description: "The start time of the event. Must be in format YYYY-MM-DD HH:MM.",
        required: true,
      },
      {
        name: "end_time",
        type: "string",
        description: "The end time of the event. Must be in format YYYY-MM-DD HH:MM.",
        required: true,
      },
      {
        name: "description",
        type: "string",
        description: "The description of the event.",
        required: false,
        default: "",
      },
      {
        name: "participants",
        type: "array",
        items: "string",
        description:
          "The list of participants' email addresses. If `null`, no participants are set. The calendar owner's email address is always included..",
        required: false,
        nullable: true,
        default: null,
      },
      {
        name: "location",
        type: "string",
        description: "The location of the event. If `null`, no location is set.",
        required: false,
        nullable: true,
        default: null,
      },
    ],
    run: (env, a) => {
      const start = strptimeMinutes(str(a.start_time));
      const end = strptimeMinutes(str(a.end_time));
      // The caller's list gets the account appended (and is then the invitation's recipient list).
      const participants = [...((a.participants as string[] | null) ?? []), env.calendar.account_email];
      const id = nextId(env.calendar.events.keys());
      const event: CalendarEvent = {
        id_: id,
        title: str(a.title),
        description: str(a.description),
        start_time: start,
        end_time: end,
        location: a.location as string | null,
        participants: validateParticipants([...new Set(participants)]),
        all_day: false,
        status: "confirmed",
      };
      env.calendar.events.set(id, event);
      sendEmail(env.inbox, participants, `Invitation: ${event.title}`, event.description, [event]);
      return showYaml(eventDump(event));
    },
  },
  {
    name: "cancel_calendar_event",
    description:
      "Cancels the event with the given `event_id`. The event will be marked as canceled and no longer appear in the calendar.",
    parameters: [
      { name: "event_id", type: "string", description: "The ID of the event to cancel.", required: true },
    ],
    run: (env, a) => {
      const id = str(a.event_id);
      const event = eventOrFail(env.calendar, id);
      event.status = "canceled";
      sendEmail(env.inbox, event.participants, `Canceled: '${event.title}'`, "The event has been canceled.", [
        event,
      ]);
      return `Event with ID ${id} has been canceled and participants have been notified.`;
    },
  },
  {
    name: "reschedule_calendar_event",
    description: "Reschedules the event with the given `event_id` to the new start and end times.",
    parameters: [
      { name: "event_id", type: "string", description: "The ID of the event to reschedule.", required: true },
      {
        name: "new_start_time",
        type: "string",
        description: "The new start time of the event. Must be in format YYYY-MM-DD HH:MM.",
        required: true,
      },
      {
        name: "new_end_time",
        type: "string",
        description:
          "The new end time of the event. Must be in format YYYY-MM-DD HH:MM.\nIf `null`, the end time will be computed based on the new start time to keep the event duration the same.",
        required: false,
        nullable: true,
        default: null,
      },
    ],
    run: (env, a) => {
      const newEnd = a.new_end_time === null ? null : strptimeMinutes(str(a.new_end_time));
      const newStart = strptimeMinutes(str(a.new_start_time));
      const event = eventOrFail(env.calendar, str(a.event_id));
      const oldStart = event.start_time;
      event.start_time = newStart;
      event.end_time =
        newEnd ??
        datetimeFromMicros(
          datetimeMicros(newStart) + (datetimeMicros(event.end_time) - datetimeMicros(oldStart)),
        );
      const body = `The event has been rescheduled. It will start on  ${dateOf(event.start_time)} at ${timePart(event.start_time)} and end on ${dateOf(event.end_time)} at ${timePart(event.end_time)}.`;
      sendEmail(env.inbox, event.participants, "Rescheduled: '{event.title}'", body, [event]);
      return showYaml(eventDump(event));
    },
  },
  {
    name: "add_calendar_event_participants",
    description: "Adds the given `participants` to the event with the given `event_id`.",
    parameters: [
      {
        name: "event_id",
        type: "string",
        description: "The ID of the event to add participants to.",
        required: true,
      },
      {
        name: "participants",
        type: "array",
        items: "string",
        description: "The list of participants' email addresses to add to the event.",
        required: true,
      },
    ],
    run: (env, a) => {
      const event = eventOrFail(env.calendar, str(a.event_id));
      event.participants.push(...(a.participants as string[]));
      return showYaml(eventDump(event));
    },
  },
];

/** The calendar tools called `names`, in that order (a suite's subset); an unknown name is an error. */
export function calendarTools(names: readonly string[]): readonly T[] {
  return names.map((n) => {
    const tool = CALENDAR_TOOLS.find((t) => t.name === n);
    if (tool === undefined) throw new Error(`no calendar tool named ${JSON.stringify(n)}`);
    return tool;
  });
}
