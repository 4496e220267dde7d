/**
 * The travel suite's 28 tools in AgentDojo's order (`default_suites/v1/travel/task_suite.py`): user,
 * hotels, restaurants, car rentals, calendar, reservations, flights, email.
 * @module
 */
import type { Tool } from "../../suite.js";
import type { TravelEnvironment } from "./environment.js";
import { calendarTools } from "../../clients/calendar-tools.js";
import { emailTools } from "../../clients/email-tools.js";
import {
  CAR_RENTAL_TOOLS,
  GET_FLIGHT_INFORMATION,
  GET_USER_INFORMATION,
  HOTEL_TOOLS,
  RESERVE_CAR_RENTAL,
  RESERVE_HOTEL,
  RESERVE_RESTAURANT,
  RESTAURANT_TOOLS,
} from "./tools-travel.js";

/** Every travel tool. */
export const TRAVEL_TOOLS: readonly Tool<TravelEnvironment>[] = [
  GET_USER_INFORMATION,
  ...HOTEL_TOOLS,
  ...RESTAURANT_TOOLS,
  ...CAR_RENTAL_TOOLS,
  ...calendarTools([
    "create_calendar_event",
    "search_calendar_events",
    "get_day_calendar_events",
    "cancel_calendar_event",
  ]),
  RESERVE_HOTEL,
  RESERVE_CAR_RENTAL,
  RESERVE_RESTAURANT,
  GET_FLIGHT_INFORMATION,
  ...emailTools(["send_email"]),
];
