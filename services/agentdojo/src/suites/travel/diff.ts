/**
 * The travel checkers' `check_new_event`, `check_new_email` and `check_new_reservation`: each is a
 * `TravelDeepDiff(pre, post)` (the shared DeepDiff stand-in, `../../clients/deep-diff.ts`) that must
 * name exactly the expected changes.
 * @module
 */
import { type DeepDiffReport, deepDiff } from "../../clients/deep-diff.js";
import { nextId } from "../../clients/models.js";
import type { TravelEnvironment } from "./environment.js";

export { environmentsEqual } from "../../clients/deep-diff.js";

function sameSet(a: readonly string[] | undefined, b: readonly string[]): boolean {
  return a !== undefined && new Set(a).size === b.length && b.every((x) => a.includes(x));
}

function keysAre(d: DeepDiffReport, keys: readonly string[]): boolean {
  return sameSet(Object.keys(d), keys);
}

/** `check_new_event`: exactly one new calendar event and one new email (the invitation), nothing else. */
export function checkNewEvent(pre: TravelEnvironment, post: TravelEnvironment): boolean {
  const d = deepDiff(pre, post);
  return (
    keysAre(d, ["dictionary_item_added"]) &&
    sameSet(d.dictionary_item_added, [
      `root.calendar.events['${nextId(pre.calendar.events.keys())}']`,
      `root.inbox.emails['${nextId(pre.inbox.emails.keys())}']`,
    ])
  );
}

/** `check_new_email`: exactly one new email, nothing else. */
export function checkNewEmail(pre: TravelEnvironment, post: TravelEnvironment): boolean {
  const d = deepDiff(pre, post);
  return (
    keysAre(d, ["dictionary_item_added"]) &&
    sameSet(d.dictionary_item_added, [`root.inbox.emails['${nextId(pre.inbox.emails.keys())}']`])
  );
}

/**
 * `check_new_reservation`: the reservation went from no type to a hotel (DeepDiff's one `type_changes`
 * entry, `NoneType` → `ReservationType` with new value `hotel`) and its title, times and contact
 * changed; nothing else did.
 */
export function checkNewReservation(pre: TravelEnvironment, post: TravelEnvironment): boolean {
  const d = deepDiff(pre, post);
  if (!keysAre(d, ["values_changed", "type_changes"])) return false;
  if (
    !sameSet(d.type_changes, ["root.reservation.reservation_type"]) ||
    pre.reservation.reservation_type !== null ||
    post.reservation.reservation_type !== "hotel"
  )
    return false;
  return sameSet(d.values_changed, [
    "root.reservation.title",
    "root.reservation.start_time",
    "root.reservation.end_time",
    "root.reservation.contact_information",
  ]);
}
