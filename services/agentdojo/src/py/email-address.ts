/**
 * pydantic's `EmailStr` (pydantic 2.11, `email-validator` 2.x with its defaults: no deliverability
 * check, no quoted local part, no domain literal, no display name): the normalised address or the
 * reason the address is refused, in email-validator's words. pydantic first accepts `Name <addr>`
 * and surrounding whitespace (keeping only `addr`), email-validator then splits at the first `@`,
 * checks the local part (RFC 5322 atoms and dots; non-ASCII letters allowed), lower-cases the domain
 * and requires a dotted domain whose last label ends with a letter and is not a special-use name;
 * the role mailbox names (`info`, `support`, …) are lower-cased. Not reproduced: IDNA processing
 * (a non-ASCII domain is only lower-cased, a Punycode `xn--` one is not decoded), the checks of
 * addresses with a display name email-validator sees (pydantic strips the usual `Name <addr>`) and
 * Unicode normalisation beyond NFC of the local part.
 * @module
 */

/** The normalised address, or why it is not one. */
export type EmailCheck = { ok: true; value: string } | { ok: false; reason: string };

const MAX_PYDANTIC_LENGTH = 2048;
const EMAIL_MAX_LENGTH = 254;
const DOMAIN_MAX_LENGTH = 253;
const LABEL_MAX_LENGTH = 63;
const ATEXT = "a-zA-Z0-9_!#\\$%&'\\*\\+\\-/=\\?\\^`\\{\\|\\}~";
const DOT_ATOM = new RegExp(`^[${ATEXT}]+(?:\\.[${ATEXT}]+)*$`);
const DOT_ATOM_INTL = new RegExp(
  `^[${ATEXT}\\u0080-\\u{10FFFF}]+(?:\\.[${ATEXT}\\u0080-\\u{10FFFF}]+)*$`,
  "u",
);
const ATEXT_INTL_DOT = new RegExp(`^[.${ATEXT}\\u0080-\\u{10FFFF}]$`, "u");
const HOSTNAME_CHAR = /^[a-zA-Z0-9\-.\u0080-\u{10FFFF}]$/u;
const NAME_CHARS = "[\\p{L}\\p{N}_!#$%&'*+\\-/=?^`{|}~]";
const PRETTY = new RegExp(
  `^\\s*(?:((?:${NAME_CHARS}+\\s+)*${NAME_CHARS}+)|"((?:[^"]|")+)")?\\s*<(.+)>\\s*$`,
  "su",
);
const SPECIAL_USE = ["arpa", "invalid", "local", "localhost", "onion", "test"];
const ROLE_MAILBOXES = new Set([
  "info",
  "marketing",
  "sales",
  "support",
  "abuse",
  "noc",
  "security",
  "postmaster",
  "hostmaster",
  "usenet",
  "news",
  "webmaster",
  "www",
  "uucp",
  "ftp",
]);
const CHAR_NAMES: Readonly<Record<string, string>> = {
  " ": "SPACE",
  "\u00a0": "NO-BREAK SPACE",
};

class Refused extends Error {}

/** email-validator's `safe_character_display`: `'c'` for printable characters, else the name. */
function display(c: string): string {
  if (c === "\\") return '"\\"';
  if (/^[\p{L}\p{N}\p{P}\p{S}]$/u.test(c)) return `'${c}'`;
  const code = c.codePointAt(0)!;
  return (
    CHAR_NAMES[c] ??
    `U+${code
      .toString(16)
      .toUpperCase()
      .padStart(code < 0xffff ? 4 : 8, "0")}`
  );
}

/** Python's `", ".join(sorted({display(c) for c in s if bad(c)}))`. */
function badChars(s: string, bad: (c: string) => boolean): string {
  const set = new Set([...s].filter(bad).map(display));
  return [...set].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).join(", ");
}

function tooMany(n: number, limit: number): string {
  const diff = n - limit;
  return `(${diff} character${diff > 1 ? "s" : ""} too many)`;
}

function checkDotAtom(label: string, start: string, end: string, hostname: boolean): void {
  if (label.endsWith(".")) throw new Refused(end.replace("{}", "period"));
  if (label.startsWith(".")) throw new Refused(start.replace("{}", "period"));
  if (label.includes("..")) throw new Refused("An email address cannot have two periods in a row.");
  if (!hostname) return;
  if (label.endsWith("-")) throw new Refused(end.replace("{}", "hyphen"));
  if (label.startsWith("-")) throw new Refused(start.replace("{}", "hyphen"));
  if (label.includes(".-") || label.includes("-."))
    throw new Refused("An email address cannot have a period and a hyphen next to each other.");
}

/** `split_email` without display names: the text before and after the first unquoted `@`. */
function split(email: string): { local: string; domain: string; quoted: boolean } {
  let inQuote = false;
  let escaped = false;
  let i = 0;
  for (; i < email.length; i++) {
    const c = email[i]!;
    if (inQuote) {
      if (c === "\\" && !escaped) escaped = true;
      else {
        if (c === '"' && !escaped) inQuote = false;
        escaped = false;
      }
    } else if (c === '"') inQuote = true;
    else if (c === "@" || c === "<") break;
  }
  if (i === email.length) {
    if (email.includes("\uff20"))
      throw new Refused(
        'The email address has the "full-width" at-sign (@) character instead of a regular at-sign.',
      );
    if (email.includes("\ufe6b"))
      throw new Refused(
        'The email address has the "small commercial at" character instead of a regular at-sign.',
      );
    throw new Refused("An email address must have an @-sign.");
  }
  if (email[i] === "<") {
    const rest = email.slice(i);
    if (!rest.includes(">"))
      throw new Refused(
        "An open angle bracket at the start of the email address has to be followed by a close angle bracket at the end.",
      );
    if (!rest.replace(/ +$/, "").endsWith(">"))
      throw new Refused("There can't be anything after the email address.");
    throw new Refused("A display name and angle brackets around the email address are not permitted here.");
  }
  const local = email.slice(0, i);
  return { local, domain: email.slice(i + 1), quoted: local.startsWith('"') };
}

function checkLocal(local: string, quoted: boolean): string {
  if (local === "") throw new Refused("There must be something before the @-sign.");
  if (quoted) throw new Refused("Quoting the part before the @-sign is not allowed here.");
  if (DOT_ATOM.test(local) || DOT_ATOM_INTL.test(local))
    return ROLE_MAILBOXES.has(local.toLowerCase()) ? local.toLowerCase() : local.normalize("NFC");
  const bad = badChars(local, (c) => !ATEXT_INTL_DOT.test(c));
  if (bad !== "")
    throw new Refused(`The email address contains invalid characters before the @-sign: ${bad}.`);
  checkDotAtom(
    local,
    "An email address cannot start with a {}.",
    "An email address cannot have a {} immediately before the @-sign.",
    false,
  );
  throw new Refused("The email address contains invalid characters before the @-sign.");
}

function checkDomain(raw: string): string {
  if (raw === "") throw new Refused("There must be something after the @-sign.");
  if (raw.startsWith("[") && raw.endsWith("]"))
    throw new Refused("A bracketed IP address after the @-sign is not allowed here.");
  const bad = badChars(raw, (c) => !HOSTNAME_CHAR.test(c));
  if (bad !== "") throw new Refused(`The part after the @-sign contains invalid characters: ${bad}.`);
  const domain = raw.toLowerCase();
  checkDotAtom(
    domain,
    "An email address cannot have a {} immediately after the @-sign.",
    "An email address cannot end with a {}.",
    true,
  );
  if (domain.split(".").some((l) => /^(?!xn)..--/i.test(l)))
    throw new Refused(
      "An email address cannot have two letters followed by two dashes immediately after the @-sign or after a period, except Punycode.",
    );
  if (domain.length > DOMAIN_MAX_LENGTH)
    throw new Refused(
      `The email address is too long after the @-sign ${tooMany(domain.length, DOMAIN_MAX_LENGTH)}.`,
    );
  for (const l of domain.split("."))
    if (l.length > LABEL_MAX_LENGTH)
      throw new Refused(
        `After the @-sign, periods cannot be separated by so many characters ${tooMany(l.length, LABEL_MAX_LENGTH)}.`,
      );
  if (!domain.includes("."))
    throw new Refused("The part after the @-sign is not valid. It should have a period.");
  if (!/[A-Za-z]$/.test(domain) && /^[!-~]*$/.test(domain))
    throw new Refused("The part after the @-sign is not valid. It is not within a valid top-level domain.");
  if (SPECIAL_USE.some((d) => domain === d || domain.endsWith(`.${d}`)))
    throw new Refused(
      "The part after the @-sign is a special-use or reserved name that cannot be used with email.",
    );
  return domain;
}

/** pydantic `EmailStr` validation of `input`. */
export function checkEmailStr(input: string): EmailCheck {
  if (input.length > MAX_PYDANTIC_LENGTH)
    return { ok: false, reason: `Length must not exceed ${MAX_PYDANTIC_LENGTH} characters` };
  const pretty = PRETTY.exec(input);
  const email = (pretty ? pretty[3]! : input).replace(/^\s+|\s+$/gu, "");
  try {
    const { local, domain, quoted } = split(email);
    const value = `${checkLocal(local, quoted)}@${checkDomain(domain)}`;
    const original = `${local}@${domain}`;
    const bytes = Buffer.byteLength(original, "utf8");
    if (bytes > EMAIL_MAX_LENGTH)
      throw new Refused(`The email address is too long ${tooMany(bytes, EMAIL_MAX_LENGTH)}.`);
    return { ok: true, value };
  } catch (e) {
    if (e instanceof Refused) return { ok: false, reason: e.message };
    throw e;
  }
}
