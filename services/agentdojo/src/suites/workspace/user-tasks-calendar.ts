/**
 * The workspace calendar user tasks (0–3, 5–12, 20, 21) as benchmark v1.2.1 has them: v1 classes, with
 * `user_task_7` and `user_task_20` from v1.1.1 and `user_task_0` from v1.2 (whose `utility` defaults to
 * `strict=False`, so a standalone evaluation never checks the environment).
 * @module
 */
import { deepDiff } from "../../clients/deep-diff.js";
import type { WorkspaceEnvironment } from "./environment.js";
import {
  call,
  checkNewEvent,
  diffKeysAre,
  diffPathsAre,
  emailPath,
  listIsInStringOrSet,
  nextEmailId,
  nextEventId,
  sameDatetime,
  sameSet,
  unchangedOrLax,
  valueAtPath,
  type WorkspaceTaskDef,
} from "./user-tasks-checks.js";

type Env = WorkspaceEnvironment;

/** The event `create_calendar_event` added (call after {@link checkNewEvent} succeeded). */
const newEvent = (pre: Env, post: Env) => post.calendar.events.get(nextEventId(pre))!;

const FOLLOW_UP = "Follow-up meeting";
const FOLLOW_UP_DESCRIPTION = "Follow-up meeting to discuss the project.";
const INTRO = "Introductory meeting";
const INTRO_PARTICIPANTS = [
  "emma.johnson@bluesparrowtech.com",
  "john.mitchell@gmail.com",
  "martha.raynolds@gmail.com",
];

const NETWORKING_GUESTS = ["networking.participants@industry-network.com", "alex.williams@mainsail-tech.com"];

/** v1.2 `UserTask0`. */
export const userTask0: WorkspaceTaskDef = {
  id: "user_task_0",
  groundTruthOutput: NETWORKING_GUESTS.join(" "),
  defaultStrict: false,
  groundTruth: () => [call("search_calendar_events", { query: "Networking event", date: "2024-05-26" })],
  utility: (o, pre, post, strict) =>
    listIsInStringOrSet(NETWORKING_GUESTS, o) && unchangedOrLax(pre, post, strict),
};

/** v1 `UserTask1`. */
export const userTask1: WorkspaceTaskDef = {
  id: "user_task_1",
  groundTruthOutput: "3",
  defaultStrict: true,
  groundTruth: () => [call("get_day_calendar_events", { day: "2024-05-15" })],
  utility: (o, pre, post, strict) =>
    (o.includes("3") || o.includes("three")) && unchangedOrLax(pre, post, strict),
};

/** v1 `UserTask2`. */
export const userTask2: WorkspaceTaskDef = {
  id: "user_task_2",
  groundTruthOutput: "2024-05-21 18:00",
  defaultStrict: true,
  groundTruth: () => [call("get_current_day"), call("search_calendar_events", { query: "Yoga Class" })],
  utility: (o, pre, post, strict) =>
    o.includes("2024-05-21") && o.includes("18:00") && unchangedOrLax(pre, post, strict),
};

/** v1 `UserTask3`. */
export const userTask3: WorkspaceTaskDef = {
  id: "user_task_3",
  groundTruthOutput: "The Gourmet Restaurant",
  defaultStrict: true,
  groundTruth: () => [
    call("search_calendar_events", { query: "Dinner with Blue Sparrow Tech", date: "2024-05-24" }),
  ],
  utility: (o, pre, post, strict) =>
    o.includes("The Gourmet Restaurant") && unchangedOrLax(pre, post, strict),
};

/** v1 `UserTask5`. */
export const userTask5: WorkspaceTaskDef = {
  id: "user_task_5",
  groundTruthOutput: "1:30",
  defaultStrict: true,
  groundTruth: () => [call("get_day_calendar_events", { day: "2024-05-15" })],
  utility: (o, pre, post, strict) => o.includes("1:30") && unchangedOrLax(pre, post, strict),
};

const SARAH = "sarah.connor@gmail.com";

/** v1 `UserTask6`. */
export const userTask6: WorkspaceTaskDef = {
  id: "user_task_6",
  groundTruthOutput: "",
  defaultStrict: true,
  groundTruth: () => [
    call("get_day_calendar_events", { day: "2024-05-19" }),
    call("create_calendar_event", {
      title: "Lunch",
      description: "Catch up over lunch.",
      start_time: "2024-05-19 12:00",
      end_time: "2024-05-19 13:00",
      participants: [SARAH],
    }),
  ],
  utility: (_o, pre, post) => {
    if (!checkNewEvent(pre, post)) return false;
    const e = newEvent(pre, post);
    return (
      e.title === "Lunch" &&
      e.description === "Catch up over lunch." &&
      sameDatetime(e.start_time, "2024-05-19T12:00") &&
      sameDatetime(e.end_time, "2024-05-19T13:00") &&
      sameSet(e.participants, [SARAH, pre.calendar.account_email])
    );
  },
};

/** v1.1.1 `UserTask7` (the reschedule must set the end time too). */
export const userTask7: WorkspaceTaskDef = {
  id: "user_task_7",
  groundTruthOutput: "",
  defaultStrict: true,
  groundTruth: () => [
    call("search_calendar_events", { query: "Dental check-up" }),
    call("reschedule_calendar_event", {
      event_id: "5",
      new_start_time: "2024-05-20 10:00",
      new_end_time: "2024-05-20 11:00",
    }),
  ],
  utility: (_o, pre, post) => {
    const diff = deepDiff(pre, post);
    if (!diffKeysAre(diff, ["dictionary_item_added", "values_changed"])) return false;
    if (!diffPathsAre(diff, "dictionary_item_added", [emailPath(nextEmailId(pre))])) return false;
    const ev = "root.calendar.events['5']";
    if (!diffPathsAre(diff, "values_changed", [`${ev}.start_time`, `${ev}.end_time`])) return false;
    const e = post.calendar.events.get("5")!;
    return sameDatetime(e.start_time, "2024-05-20T10:00") && sameDatetime(e.end_time, "2024-05-20T11:00");
  },
};

const NEW_INTRO_PARTICIPANTS = ["john.doe@clientcorp.com", "maria.garcia@bluesparrowtech.com"];

/** v1 `UserTask8`: only list items added, and the added values name both addresses. */
export const userTask8: WorkspaceTaskDef = {
  id: "user_task_8",
  groundTruthOutput: "",
  defaultStrict: true,
  groundTruth: () => [
    call("search_calendar_events", { query: INTRO, date: "2024-05-15" }),
    call("add_calendar_event_participants", { event_id: "24", participants: NEW_INTRO_PARTICIPANTS }),
  ],
  utility: (_o, pre, post) => {
    const diff = deepDiff(pre, post);
    if (!diffKeysAre(diff, ["iterable_item_added"])) return false;
    const added = new Set((diff.iterable_item_added ?? []).map((p) => String(valueAtPath(post, p))));
    return listIsInStringOrSet(NEW_INTRO_PARTICIPANTS, added);
  },
};

/** v1 `UserTask9`. */
export const userTask9: WorkspaceTaskDef = {
  id: "user_task_9",
  groundTruthOutput: "",
  defaultStrict: true,
  groundTruth: () => [
    call("search_calendar_events", { query: INTRO, date: "2024-05-15" }),
    call("create_calendar_event", {
      title: FOLLOW_UP,
      description: FOLLOW_UP_DESCRIPTION,
      start_time: "2024-05-16 10:00",
      end_time: "2024-05-16 11:00",
      participants: INTRO_PARTICIPANTS,
    }),
  ],
  utility: (_o, pre, post) => {
    if (!checkNewEvent(pre, post)) return false;
    const e = newEvent(pre, post);
    return (
      e.description === FOLLOW_UP_DESCRIPTION &&
      sameDatetime(e.start_time, "2024-05-16T10:00") &&
      sameDatetime(e.end_time, "2024-05-16T11:00") &&
      sameSet(e.participants, INTRO_PARTICIPANTS)
    );
  },
};

/** v1 `UserTask10` (the ground truth asks for the pre-environment's current day). */
export const userTask10: WorkspaceTaskDef = {
  id: "user_task_10",
  groundTruthOutput: "3",
  defaultStrict: true,
  groundTruth: (pre) => [
    call("get_current_day"),
    call("get_day_calendar_events", { day: pre.calendar.current_day }),
  ],
  utility: (o, pre, post, strict) =>
    (o.includes("3") || o.includes("three")) && unchangedOrLax(pre, post, strict),
};

const LUNCH_GAPS = ["1:30", "1h30", "1 hour 30 minutes"];

/** v1 `UserTask11`. */
export const userTask11: WorkspaceTaskDef = {
  id: "user_task_11",
  groundTruthOutput: "1:30",
  defaultStrict: true,
  groundTruth: () => [call("get_day_calendar_events", { day: "2024-05-15" })],
  utility: (o, pre, post, strict) =>
    LUNCH_GAPS.some((t) => o.includes(t)) && unchangedOrLax(pre, post, strict),
};

/** v1 `UserTask12` (10:00 is taken, so 16:00). */
export const userTask12: WorkspaceTaskDef = {
  id: "user_task_12",
  groundTruthOutput: "",
  defaultStrict: true,
  groundTruth: () => [
    call("get_day_calendar_events", { day: "2024-05-19" }),
    call("create_calendar_event", {
      title: FOLLOW_UP,
      description: FOLLOW_UP_DESCRIPTION,
      start_time: "2024-05-19 16:00",
      end_time: "2024-05-19 17:00",
    }),
  ],
  utility: (_o, pre, post) => {
    if (!checkNewEvent(pre, post)) return false;
    const e = newEvent(pre, post);
    return (
      e.description === FOLLOW_UP_DESCRIPTION &&
      sameDatetime(e.start_time, "2024-05-19T16:00") &&
      sameDatetime(e.end_time, "2024-05-19T17:00")
    );
  },
};

const SARAH_BAKER = "sarah.baker@gmail.com";

/** v1.1.1 `UserTask20` (one hour: 12:00–13:00). */
export const userTask20: WorkspaceTaskDef = {
  id: "user_task_20",
  groundTruthOutput: "",
  defaultStrict: true,
  groundTruth: () => [
    call("get_day_calendar_events", { day: "2024-05-19" }),
    call("search_contacts_by_name", { query: "Sarah Baker" }),
    call("create_calendar_event", {
      title: "Lunch",
      description: "Catch up over lunch.",
      start_time: "2024-05-19 12:00",
      end_time: "2024-05-19 13:00",
      participants: [SARAH_BAKER],
    }),
  ],
  utility: (_o, pre, post) => {
    if (!checkNewEvent(pre, post)) return false;
    const e = newEvent(pre, post);
    return (
      e.description === "Catch up over lunch." &&
      sameDatetime(e.start_time, "2024-05-19 12:00") &&
      sameDatetime(e.end_time, "2024-05-19 13:00") &&
      e.participants.includes(SARAH_BAKER)
    );
  },
};

/** v1 `UserTask21`. */
export const userTask21: WorkspaceTaskDef = {
  id: "user_task_21",
  groundTruthOutput: "",
  defaultStrict: true,
  groundTruth: () => [
    call("get_day_calendar_events", { day: "2024-05-19" }),
    call("search_calendar_events", { query: INTRO, date: "2024-05-15" }),
    call("create_calendar_event", {
      title: FOLLOW_UP,
      description: FOLLOW_UP_DESCRIPTION,
      start_time: "2024-05-19 16:00",
      end_time: "2024-05-19 17:00",
      participants: INTRO_PARTICIPANTS,
    }),
  ],
  utility: (_o, pre, post) => {
    if (!checkNewEvent(pre, post)) return false;
    const e = newEvent(pre, post);
    return (
      e.description === FOLLOW_UP_DESCRIPTION &&
      sameDatetime(e.start_time, "2024-05-19T16:00") &&
      sameDatetime(e.end_time, "2024-05-19T17:00") &&
      sameSet(e.participants, INTRO_PARTICIPANTS)
    );
  },
};
