/**
 * The email tools (`default_suites/v1/tools/email_client.py`) with upstream's behaviour: searches
 * are case-insensitive substrings; `search_emails` and the contact searches raise `ValueError` when
 * nothing matches; `get_unread_emails` marks what it returns as read; `delete_email` moves the email to
 * the trash; `send_email` takes file attachments (`{"type": "file", "file_id"}`, or any dict with a
 * `file_id`) and event attachments (`{"type": "event", "event_details": {...}}`). A suite exposes the
 * subset it lists ({@link emailTools}).
 * @module
 */
import { pyRepr } from "../render.js";
import { type Tool, ToolError } from "../suite.js";
import {
  type CalendarEvent,
  calendarEventFromDict,
  contactDump,
  emailDump,
  emailsWithStatus,
  type Inbox,
  searchEmails,
  sendEmail,
  showYaml,
} from "./models.js";

/** What the email tools need of an environment. */
export interface EmailEnvironment {
  readonly inbox: Inbox;
}

type T = Tool<EmailEnvironment>;
const str = (v: unknown) => v as string;

/** `send_email`'s attachment parsing (raises upstream's `ValueError`s). */
function parseAttachments(raw: readonly unknown[]): (string | CalendarEvent)[] {
  return raw.map((a) => {
    if (a === null || typeof a !== "object" || Array.isArray(a))
      throw new ToolError("ValueError", "Attachments must be dictionaries.");
    const att = a as Record<string, unknown>;
    if (!Object.hasOwn(att, "type"))
      throw new ToolError("ValueError", "Attachment must have a 'type' field.");
    if (att.type === "file" || Object.hasOwn(att, "file_id")) {
      if (!Object.hasOwn(att, "file_id"))
        throw new ToolError("ValueError", "Attachment of type 'file' must have a 'file_id' field.");
      // `CloudDriveFileID(x)` is `str(x)`.
      return pyStr(att.file_id);
    }
    if (!Object.hasOwn(att, "event_details"))
      throw new ToolError("ValueError", "Attachment of type 'event' must have an 'event_details' field.");
    return calendarEventFromDict(att.event_details);
  });
}

/** Python's `str()` of a JSON value (what `CloudDriveFileID(...)` does to a file id). */
function pyStr(v: unknown): string {
  return typeof v === "string" ? v : pyRepr(v);
}

const listOfEmails = (emails: Parameters<typeof emailDump>[0][]) => showYaml(emails.map(emailDump));

/** Every email tool, in AgentDojo's order. */
export const EMAIL_TOOLS: readonly T[] = [
  {
    name: "send_email",
    description:
      "Sends an email with the given `body` to the given `address`. Returns a dictionary with the email details.",
    parameters: [
      {
        name: "recipients",
        type: "array",
        items: "string",
        description: "The list with the email addresses of the recipients.",
        required: true,
      },
      { name: "subject", type: "string", description: "The subject of the email.", required: true },
      { name: "body", type: "string", description: "The body of the email.", required: true },
      {
        name: "attachments",
        type: "array",
        items: "object",
        description:
          'The list of attachments to include in the email. If `null`, no attachments are included.\nIf the attachment has as "type" "file", then it is expected to have a field "file_id", with the ID of the file in the\ncloud drive. If the attachment has as "type" "event", then it is expected to be a calendar event in the field "event_details".\nA calendar event has the following fields: `title`, `description`, `start_time` (in ISO format), `end_time`\n(in ISO format), `location`, and participants (a list of emails).',
        required: false,
        nullable: true,
        default: null,
      },
      {
        name: "cc",
        type: "array",
        items: "string",
        description:
          "The list of email addresses to include in the CC field. If `null`, no email addresses are included.",
        required: false,
        nullable: true,
        default: null,
      },
      {
        name: "bcc",
        type: "array",
        items: "string",
        description:
          "The list of email addresses to include in the BCC field. If `null`, no email addresses are included.",
        required: false,
        nullable: true,
        default: null,
      },
    ],
    run: (env, a) => {
      const attachments = a.attachments === null ? null : parseAttachments(a.attachments as unknown[]);
      const email = sendEmail(
        env.inbox,
        a.recipients as string[],
        str(a.subject),
        str(a.body),
        attachments,
        a.cc as string[] | null,
        a.bcc as string[] | null,
      );
      return showYaml(emailDump(email));
    },
  },
  {
    name: "delete_email",
    description: "Deletes the email with the given `email_id` from the inbox.",
    parameters: [
      { name: "email_id", type: "string", description: "The id of the email to delete.", required: true },
    ],
    run: (env, a) => {
      const id = str(a.email_id);
      const email = env.inbox.emails.get(id);
      if (email === undefined) throw new ToolError("ValueError", `Email with ID '${id}' not found.`);
      env.inbox.emails.delete(id);
      env.inbox.trash.set(id, email);
      return `Email with id ${id} deleted successfully.`;
    },
  },
  {
    name: "get_unread_emails",
    description:
      "Returns all the unread emails in the inbox. Each email has a sender, a subject, and a body.",
    parameters: [],
    run: (env) => {
      const unread = [...env.inbox.emails.values()].filter((e) => !e.read);
      for (const e of unread) e.read = true;
      return listOfEmails(unread);
    },
  },
  {
    name: "get_sent_emails",
    description:
      "Returns all the sent emails in the inbox. Each email has a recipient, a subject, and a body.",
    parameters: [],
    run: (env) => listOfEmails(emailsWithStatus(env.inbox, "sent")),
  },
  {
    name: "get_received_emails",
    description:
      "Returns all the received emails in the inbox. Each email has a sender, a subject, and a body.",
    parameters: [],
    run: (env) => listOfEmails(emailsWithStatus(env.inbox, "received")),
  },
  {
    name: "get_draft_emails",
    description:
      "Returns all the draft emails in the inbox. Each email has a recipient, a subject, and a body.",
    parameters: [],
    run: (env) => listOfEmails(emailsWithStatus(env.inbox, "draft")),
  },
  {
    name: "search_emails",
    description:
      "Searches for emails in the inbox that contain the given query in the subject or body. If `address` is provided,",
    parameters: [
      {
        name: "query",
        type: "string",
        description:
          "The query to search for in the email subject or body. If empty, all emails are returned.",
        required: true,
      },
      {
        name: "sender",
        type: "string",
        description:
          "The email address of the sender. If `null`, all emails are searched. Use `search_contacts_by_name`\nif the email address is unknown.",
        required: false,
        nullable: true,
        default: null,
      },
    ],
    run: (env, a) => {
      const matches = searchEmails(env.inbox, str(a.query), a.sender as string | null);
      if (matches.length === 0)
        throw new ToolError("ValueError", "No emails found. Try with a different query.");
      return listOfEmails(matches);
    },
  },
  {
    name: "search_contacts_by_name",
    description: "Finds contacts in the inbox's contact list by name.",
    parameters: [
      {
        name: "query",
        type: "string",
        description: "The name of the contacts to search for.",
        required: true,
      },
    ],
    run: (env, a) => {
      const q = str(a.query);
      const matches = env.inbox.contact_list.filter((c) => c.name.toLowerCase().includes(q.toLowerCase()));
      if (matches.length === 0) throw new ToolError("ValueError", `Contact with name '${q}' not found.`);
      return showYaml(matches.map(contactDump));
    },
  },
  {
    name: "search_contacts_by_email",
    description: "Finds contacts in the inbox's contact list by email.",
    parameters: [
      {
        name: "query",
        type: "string",
        description: "The email of the contacts to search for.",
        required: true,
      },
    ],
    run: (env, a) => {
      const q = str(a.query);
      const matches = env.inbox.contact_list.filter((c) => c.email.toLowerCase().includes(q.toLowerCase()));
      if (matches.length === 0) throw new ToolError("ValueError", `Contact with email '${q}' not found.`);
      return showYaml(matches.map(contactDump));
    },
  },
];

/** The email tools called `names`, in that order (a suite's subset); an unknown name is an error. */
export function emailTools(names: readonly string[]): readonly T[] {
  return names.map((n) => {
    const tool = EMAIL_TOOLS.find((t) => t.name === n);
    if (tool === undefined) throw new Error(`no email tool named ${JSON.stringify(n)}`);
    return tool;
  });
}
