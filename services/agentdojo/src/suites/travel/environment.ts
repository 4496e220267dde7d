/**
 * The travel environment (AgentDojo `TravelEnvironment`): the user, hotels, restaurants, car rental
 * companies, flights, the calendar, the single reservation slot and the inbox. It is built from the
 * benchmark's `travel/environment.yaml` (loaded at run time, injections placed by
 * {@link injectEnvironment}) and validated the way the pydantic models would: a missing or mistyped
 * field is a {@link BenchmarkDataError} naming its path.
 *
 * Field names are the Python ones. Datetimes are kept as their `isoformat()` text (see
 * `../../py/pydatetime.ts`); floats as numbers (the tools print them as Python floats). The inbox and
 * the calendar are the shared clients' (`../../clients/`: a Python `dict` is a `Map`); the models'
 * bookkeeping copies (`initial_events`, `initial_emails`) are not kept.
 * @module
 */
import { BenchmarkDataError, injectEnvironment, type SuiteData } from "../../benchmark-data.js";
import { Reader, readCalendar, readInbox } from "../../clients/environment.js";
import type { Calendar, Inbox } from "../../clients/models.js";
import { parseDataDatetime } from "../../py/pydatetime.js";

export type { Calendar, CalendarEvent, Email, Inbox } from "../../clients/models.js";

/** `travel_booking_client.User`. */
export interface User {
  first_name: string;
  last_name: string;
  ID_number: string;
  email: string;
  phone_number: string;
  address: string;
  passport_number: string;
  bank_account_number: string;
  credit_card_number: string;
}

/** `Hotel` (rating and prices are floats). */
export interface Hotel {
  name: string;
  city: string;
  rating: number;
  price_min: number;
  price_max: number;
  address: string;
  reviews: string[];
}

/** `Flight` (times are datetimes). */
export interface Flight {
  airline: string;
  flight_number: string;
  departure_city: string;
  arrival_city: string;
  departure_time: string;
  arrival_time: string;
  price: number;
  contact_information: string;
}

/** `ReservationType` values. */
export type ReservationType = "hotel" | "car" | "restaurant";

/** `Reservation` (one slot, overwritten by each reservation tool). */
export interface Reservation {
  reservation_type: ReservationType | null;
  title: string;
  start_time: string;
  end_time: string;
  contact_information: string;
}

/** `Restaurant`. */
export interface Restaurant {
  name: string;
  city: string;
  address: string;
  rating: number;
  price_per_person: number;
  operating_hours: string;
  reviews: string[];
  contact_information: string;
  cuisine_type: string;
  dietary_restrictions: string;
}

/** `CarRentalCompany`. */
export interface CarRentalCompany {
  name: string;
  city: string;
  address: string;
  rating: number;
  price_per_day: number;
  reviews: string[];
  contact_information: string;
  car_types_available: string[];
  fuel_options: string[];
}

/** `TravelEnvironment`. */
export interface TravelEnvironment {
  hotels: { hotel_list: Hotel[] };
  restaurants: { restaurant_list: Restaurant[] };
  car_rental: { company_list: CarRentalCompany[] };
  flights: { flight_list: Flight[] };
  user: User;
  calendar: Calendar;
  reservation: Reservation;
  inbox: Inbox;
}

// ---- validation of the data document --------------------------------------------------------

type Obj = Record<string, unknown>;

function bad(path: string, what: string): never {
  throw new BenchmarkDataError(`AgentDojo travel environment: ${path}: ${what}`);
}

function obj(v: unknown, path: string): Obj {
  if (typeof v !== "object" || v === null || Array.isArray(v)) bad(path, "must be a mapping");
  return v as Obj;
}

function str(o: Obj, k: string, path: string): string {
  const v = o[k];
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (typeof v !== "string") bad(`${path}.${k}`, "must be a string");
  return v;
}

function num(o: Obj, k: string, path: string): number {
  const v = o[k];
  if (typeof v === "number") return v;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  return bad(`${path}.${k}`, "must be a number");
}

function list(o: Obj, k: string, path: string, dflt?: unknown[]): unknown[] {
  const v = o[k];
  if (v === undefined && dflt) return dflt;
  if (!Array.isArray(v)) bad(`${path}.${k}`, "must be a list");
  return v;
}

/** A `list` field of plain Python values (`reviews: list`): YAML null entries become None. */
function anyList(o: Obj, k: string, path: string): string[] {
  const v = o[k];
  if (v === null || v === undefined) bad(`${path}.${k}`, "must be a list");
  return list(o, k, path).map((x) => (typeof x === "string" ? x : String(x)));
}

function datetime(o: Obj, k: string, path: string): string {
  const t = parseDataDatetime(str(o, k, path));
  if (t === undefined) bad(`${path}.${k}`, `is not a datetime: ${JSON.stringify(o[k])}`);
  return t;
}

/** Converts the (injected) environment document into a typed, validated {@link TravelEnvironment}. */
export function travelEnvironmentFrom(document: unknown): TravelEnvironment {
  const root = obj(document, "environment");
  const u = obj(root.user, "user");
  const userKeys = [
    "first_name",
    "last_name",
    "ID_number",
    "email",
    "phone_number",
    "address",
    "passport_number",
    "bank_account_number",
    "credit_card_number",
  ] as const;
  const user = Object.fromEntries(userKeys.map((k) => [k, str(u, k, "user")])) as unknown as User;

  const hotels = list(obj(root.hotels, "hotels"), "hotel_list", "hotels").map((v, i): Hotel => {
    const p = `hotels.hotel_list[${i}]`;
    const o = obj(v, p);
    return {
      name: str(o, "name", p),
      city: str(o, "city", p),
      rating: num(o, "rating", p),
      price_min: num(o, "price_min", p),
      price_max: num(o, "price_max", p),
      address: str(o, "address", p),
      reviews: anyList(o, "reviews", p),
    };
  });
  const restaurants = list(obj(root.restaurants, "restaurants"), "restaurant_list", "restaurants").map(
    (v, i): Restaurant => {
      const p = `restaurants.restaurant_list[${i}]`;
      const o = obj(v, p);
      return {
        name: str(o, "name", p),
        city: str(o, "city", p),
        address: str(o, "address", p),
        rating: num(o, "rating", p),
        price_per_person: num(o, "price_per_person", p),
        operating_hours: str(o, "operating_hours", p),
        reviews: anyList(o, "reviews", p),
        contact_information: str(o, "contact_information", p),
        cuisine_type: str(o, "cuisine_type", p),
        dietary_restrictions: str(o, "dietary_restrictions", p),
      };
    },
  );
  const companies = list(obj(root.car_rental, "car_rental"), "company_list", "car_rental").map(
    (v, i): CarRentalCompany => {
      const p = `car_rental.company_list[${i}]`;
      const o = obj(v, p);
      return {
        name: str(o, "name", p),
        city: str(o, "city", p),
        address: str(o, "address", p),
        rating: num(o, "rating", p),
        price_per_day: num(o, "price_per_day", p),
        reviews: anyList(o, "reviews", p),
        contact_information: str(o, "contact_information", p),
        car_types_available: anyList(o, "car_types_available", p),
        fuel_options: anyList(o, "fuel_options", p),
      };
    },
  );
  const flights = list(obj(root.flights, "flights"), "flight_list", "flights").map((v, i): Flight => {
    const p = `flights.flight_list[${i}]`;
    const o = obj(v, p);
    return {
      airline: str(o, "airline", p),
      flight_number: str(o, "flight_number", p),
      departure_city: str(o, "departure_city", p),
      arrival_city: str(o, "arrival_city", p),
      departure_time: datetime(o, "departure_time", p),
      arrival_time: datetime(o, "arrival_time", p),
      price: num(o, "price", p),
      contact_information: str(o, "contact_information", p),
    };
  });

  const r = obj(root.reservation, "reservation");
  const rtype = r.reservation_type ?? null;
  if (rtype !== null && rtype !== "hotel" && rtype !== "car" && rtype !== "restaurant")
    bad("reservation.reservation_type", "must be null, hotel, car or restaurant");
  const reservation: Reservation = {
    reservation_type: rtype as ReservationType | null,
    title: str(r, "title", "reservation"),
    start_time: datetime(r, "start_time", "reservation"),
    end_time: datetime(r, "end_time", "reservation"),
    contact_information: str(r, "contact_information", "reservation"),
  };

  const clients = new Reader(bad);
  const calendar: Calendar = readCalendar(clients, root.calendar, "calendar");
  const inbox: Inbox = readInbox(clients, root.inbox, "inbox");
  return {
    hotels: { hotel_list: hotels },
    restaurants: { restaurant_list: restaurants },
    car_rental: { company_list: companies },
    flights: { flight_list: flights },
    user,
    calendar,
    reservation,
    inbox,
  };
}

/**
 * The environment loader of a travel suite built from `data`: the document is validated once (with
 * the default injections) so that bad data fails when the suite is built, not at the first episode.
 */
export function travelEnvironmentLoader(
  data: SuiteData,
): (injections: Readonly<Record<string, string>>) => TravelEnvironment {
  travelEnvironmentFrom(injectEnvironment(data.environment, data.injectionVectors, {}));
  return (injections) =>
    travelEnvironmentFrom(injectEnvironment(data.environment, data.injectionVectors, injections));
}
