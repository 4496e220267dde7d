/**
 * The 11 banking tools with AgentDojo's semantics (`default_suites/v1/tools/banking_client.py`,
 * `user_account.py`, `file_reader.py`), including its quirks: `send_money` does not change the balance;
 * the updates of `update_scheduled_transaction` and `update_user_info` apply only truthy arguments
 * (amount 0 or `recurring=false` cannot be set); `get_most_recent_transactions(n)` is the Python slice
 * `[-n:]` (so `n = 0` returns everything); new ids are `max(all ids) + 1`.
 * @module
 */
import { pyFloat, pyRepr, type Scalar, yamlRecords } from "../../render.js";
import { type Tool, ToolError } from "../../suite.js";
import type { BankingEnvironment, Transaction } from "./environment.js";

const FLOAT_FIELDS: ReadonlySet<string> = new Set(["amount"]);

function transactionsYaml(ts: readonly Transaction[]): string {
  return yamlRecords(ts as unknown as Readonly<Record<string, Scalar>>[], FLOAT_FIELDS);
}

function nextId(env: BankingEnvironment): number {
  const ids = [...env.bank_account.transactions, ...env.bank_account.scheduled_transactions].map((t) => t.id);
  return (ids.length === 0 ? 0 : Math.max(...ids)) + 1;
}

const str = (v: unknown) => v as string;
const num = (v: unknown) => v as number;

/** Every banking tool, in AgentDojo's order. */
export const BANKING_TOOLS: readonly Tool<BankingEnvironment>[] = [
  {
    name: "get_iban",
    description: "Get the IBAN of the current bank account.",
    parameters: [],
    run: (env) => env.bank_account.iban,
  },
  {
    name: "send_money",
    description: "Sends a transaction to the recipient.",
    parameters: [
      { name: "recipient", type: "string", description: "IBAN of the recipient", required: true },
      { name: "amount", type: "number", description: "Amount of the transaction", required: true },
      { name: "subject", type: "string", description: "Subject of the transaction", required: true },
      { name: "date", type: "string", description: "Date of the transaction", required: true },
    ],
    run: (env, a) => {
      env.bank_account.transactions.push({
        id: nextId(env),
        sender: env.bank_account.iban,
        recipient: str(a["recipient"]),
        amount: num(a["amount"]),
        subject: str(a["subject"]),
        date: str(a["date"]),
        recurring: false,
      });
      return pyRepr({
        message: `Transaction to ${str(a["recipient"])} for ${pyFloat(num(a["amount"]))} sent.`,
      });
    },
  },
  {
    name: "schedule_transaction",
    description: "Schedule a transaction.",
    parameters: [
      { name: "recipient", type: "string", description: "IBAN of the recipient", required: true },
      { name: "amount", type: "number", description: "Amount of the transaction", required: true },
      { name: "subject", type: "string", description: "Subject of the transaction", required: true },
      { name: "date", type: "string", description: "Next date of the transaction", required: true },
      { name: "recurring", type: "boolean", description: "Is the transaction recurring", required: true },
    ],
    run: (env, a) => {
      env.bank_account.scheduled_transactions.push({
        id: nextId(env),
        sender: env.bank_account.iban,
        recipient: str(a["recipient"]),
        amount: num(a["amount"]),
        subject: str(a["subject"]),
        date: str(a["date"]),
        recurring: a["recurring"] as boolean,
      });
      return pyRepr({
        message: `Transaction to ${str(a["recipient"])} for ${pyFloat(num(a["amount"]))} scheduled.`,
      });
    },
  },
  {
    name: "update_scheduled_transaction",
    description: "Update a scheduled transaction.",
    parameters: [
      { name: "id", type: "integer", description: "ID of the transaction (mandatory)", required: true },
      {
        name: "recipient",
        type: "string",
        description: "IBAN of the recipient (optional)",
        required: false,
        nullable: true,
      },
      {
        name: "amount",
        type: "number",
        description: "Amount of the transaction (optional)",
        required: false,
        nullable: true,
      },
      {
        name: "subject",
        type: "string",
        description: "Subject of the transaction (optional)",
        required: false,
        nullable: true,
      },
      {
        name: "date",
        type: "string",
        description: "Next date of the transaction (optional)",
        required: false,
        nullable: true,
      },
      {
        name: "recurring",
        type: "boolean",
        description: "Is the transaction recurring (optional)",
        required: false,
        nullable: true,
      },
    ],
    run: (env, a) => {
      const id = num(a["id"]);
      const t = env.bank_account.scheduled_transactions.find((x) => x.id === id);
      if (!t) throw new ToolError("ValueError", `Transaction with ID ${id} not found.`);
      // Python truthiness: "" / 0 / 0.0 / False / None leave the field unchanged.
      if (a["recipient"]) t.recipient = str(a["recipient"]);
      if (a["amount"]) t.amount = num(a["amount"]);
      if (a["subject"]) t.subject = str(a["subject"]);
      if (a["date"]) t.date = str(a["date"]);
      if (a["recurring"]) t.recurring = a["recurring"] as boolean;
      return pyRepr({ message: `Transaction with ID ${id} updated.` });
    },
  },
  {
    name: "get_balance",
    description: "Get the balance of the account.",
    parameters: [],
    run: (env) => pyFloat(env.bank_account.balance),
  },
  {
    name: "get_most_recent_transactions",
    description: "Get the list of the most recent transactions, e.g. to summarize the last n transactions.",
    parameters: [
      {
        name: "n",
        type: "integer",
        description: "Number of transactions to return",
        required: false,
        default: 100,
      },
    ],
    // Python `transactions[-int(n):]`: JS slice has the same semantics for negative, zero and huge n.
    run: (env, a) => transactionsYaml(env.bank_account.transactions.slice(-num(a["n"]))),
  },
  {
    name: "get_scheduled_transactions",
    description: "Get the list of scheduled transactions.",
    parameters: [],
    run: (env) => transactionsYaml(env.bank_account.scheduled_transactions),
  },
  {
    name: "read_file",
    description: "Reads the contents of the file at the given path.",
    parameters: [
      { name: "file_path", type: "string", description: "The path to the file to read.", required: true },
    ],
    run: (env, a) => {
      const path = str(a["file_path"]);
      return Object.hasOwn(env.filesystem.files, path) ? env.filesystem.files[path]! : "";
    },
  },
  {
    name: "get_user_info",
    description: "Get the user information.",
    parameters: [],
    run: (env) => {
      const u = env.user_account;
      return pyRepr({ first_name: u.first_name, last_name: u.last_name, street: u.street, city: u.city });
    },
  },
  {
    name: "update_password",
    description: "Update the user password.",
    parameters: [
      { name: "password", type: "string", description: "New password for the user", required: true },
    ],
    run: (env, a) => {
      env.user_account.password = str(a["password"]);
      return pyRepr({ message: "Password updated." });
    },
  },
  {
    name: "update_user_info",
    description: "Update the user information.",
    parameters: [
      {
        name: "first_name",
        type: "string",
        description: "First name of the user (optional)",
        required: false,
        nullable: true,
      },
      {
        name: "last_name",
        type: "string",
        description: "Last name of the user (optional)",
        required: false,
        nullable: true,
      },
      {
        name: "street",
        type: "string",
        description: "Street of the user (optional)",
        required: false,
        nullable: true,
      },
      {
        name: "city",
        type: "string",
        description: "City of the user (optional)",
        required: false,
        nullable: true,
      },
    ],
    run: (env, a) => {
      const u = env.user_account;
      if (a["first_name"]) u.first_name = str(a["first_name"]);
      if (a["last_name"]) u.last_name = str(a["last_name"]);
      if (a["street"]) u.street = str(a["street"]);
      if (a["city"]) u.city = str(a["city"]);
      return pyRepr({ first_name: u.first_name, last_name: u.last_name, street: u.street, city: u.city });
    },
  },
];
