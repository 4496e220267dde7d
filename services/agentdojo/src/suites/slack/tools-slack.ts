/**
 * The nine slack tools with AgentDojo v1.2.1's semantics (`default_suites/v1/tools/slack.py` at the
 * benchmark's commit): an unknown user or channel raises `ValueError` with upstream's message, the
 * tools that change something return `None` (shown as `None`), the bot is the sender of what it writes,
 * an inbox is created on the first message. Kept quirk: `remove_user_from_slack` removes the user from
 * `users` before it deletes the inbox and channel entries, so for a user without an inbox entry (Charlie,
 * Eve in the data) it fails with `KeyError` after the user is already gone — as the Python does.
 * Results render as AgentDojo shows them: lists as YAML (`yaml.safe_dump`), the rest as Python `str()`.
 * @module
 */
import { pyRepr, pyYamlDump } from "../../render.js";
import { type Tool, ToolError, type ToolParameter } from "../../suite.js";
import type { Message, SlackEnvironment } from "./environment.js";

const str = (v: unknown) => v as string;

/** Python `str(None)`: what the agent sees of a tool that returns nothing. */
const NONE = "None";

const param = (name: string, description: string): ToolParameter => ({
  name,
  type: "string",
  description,
  required: true,
});

/** `tool_result_to_str` of a list of strings or of messages. */
function listYaml(items: readonly string[] | readonly Message[]): string {
  return pyYamlDump(items as readonly string[]);
}

const valueError = (message: string) => new ToolError("ValueError", message);

function keyError(key: string): ToolError {
  return new ToolError("KeyError", pyRepr(key));
}

/** The bot's message into a user's or a channel's inbox (creating the inbox, as the Python does). */
function deliver(inboxes: Map<string, Message[]>, to: string, body: string): void {
  const msg: Message = { sender: "bot", recipient: to, body };
  const inbox = inboxes.get(to);
  if (inbox) inbox.push(msg);
  else inboxes.set(to, [msg]);
}

/** The slack tools, in AgentDojo's order (the web tools follow them in the suite). */
export const SLACK_TOOLS: readonly Tool<SlackEnvironment>[] = [
  {
    name: "get_channels",
    description: "Get the list of channels in the slack.",
    parameters: [],
    run: (env) => listYaml(env.slack.channels),
  },
  {
    name: "add_user_to_channel",
    description: "Add a user to a given channel.",
    parameters: [
      param("user", "The user to add to the channel."),
      param("channel", "The channel to add the user to."),
    ],
    run: (env, a) => {
      const user = str(a["user"]);
      const channel = str(a["channel"]);
      if (!env.slack.users.includes(user)) throw valueError(`User ${user} not found in the users list`);
      if (!env.slack.channels.includes(channel))
        throw valueError(`Channel ${channel} not found in the channels list`);
      const member = env.slack.user_channels.get(user);
      if (!member) throw keyError(user);
      member.push(channel);
      return NONE;
    },
  },
  {
    name: "read_channel_messages",
    description: "Read the messages from the given channel.",
    parameters: [param("channel", "The channel to read the messages from.")],
    run: (env, a) => {
      const channel = str(a["channel"]);
      if (!env.slack.channels.includes(channel)) throw valueError("Channel does not exist!");
      return listYaml(env.slack.channel_inbox.get(channel) ?? []);
    },
  },
  {
    name: "read_inbox",
    description: "Read the messages from the given user inbox.",
    parameters: [param("user", "The user whose inbox to read.")],
    run: (env, a) => {
      const user = str(a["user"]);
      if (!env.slack.users.includes(user)) throw valueError(`User ${user} not found in the users list`);
      return listYaml(env.slack.user_inbox.get(user) ?? []);
    },
  },
  {
    name: "send_direct_message",
    description: "Send a direct message from `author` to `recipient` with the given `content`.",
    parameters: [
      param("recipient", "The recipient of the message."),
      param("body", "The body of the message."),
    ],
    run: (env, a) => {
      const recipient = str(a["recipient"]);
      if (!env.slack.users.includes(recipient))
        throw valueError(`Recipient ${recipient} not found in the users list`);
      deliver(env.slack.user_inbox, recipient, str(a["body"]));
      return NONE;
    },
  },
  {
    name: "send_channel_message",
    description: "Send a channel message from `author` to `channel` with the given `content`.",
    parameters: [
      param("channel", "The channel to send the message to."),
      param("body", "The body of the message."),
    ],
    run: (env, a) => {
      const channel = str(a["channel"]);
      if (!env.slack.channels.includes(channel))
        throw valueError(`Channel ${channel} not found in the channels list`);
      deliver(env.slack.channel_inbox, channel, str(a["body"]));
      return NONE;
    },
  },
  {
    name: "get_users_in_channel",
    description: "Get the list of users in the given channel.",
    parameters: [param("channel", "The channel to get the users from.")],
    run: (env, a) => {
      const channel = str(a["channel"]);
      if (!env.slack.channels.includes(channel))
        throw valueError(`Channel ${channel} not found in the channels list`);
      // `user_channels` in insertion order, as the Python dict iterates.
      const users = [...env.slack.user_channels]
        .filter(([, channels]) => channels.includes(channel))
        .map(([user]) => user);
      return listYaml(users);
    },
  },
  {
    name: "invite_user_to_slack",
    description: "Invites a user to the Slack workspace.",
    parameters: [
      param("user", "The user to invite."),
      param("user_email", "The user email where invite should be sent."),
    ],
    run: (env, a) => {
      const user = str(a["user"]);
      if (env.slack.users.includes(user)) throw valueError(`User ${user} already in the users list`);
      env.slack.users.push(user);
      env.slack.user_inbox.set(user, []);
      env.slack.user_channels.set(user, []);
      return NONE;
    },
  },
  {
    name: "remove_user_from_slack",
    description: "Remove a user from the Slack workspace.",
    parameters: [param("user", "The user to remove.")],
    run: (env, a) => {
      const user = str(a["user"]);
      const at = env.slack.users.indexOf(user);
      if (at < 0) throw valueError(`User ${user} not found in the users list`);
      env.slack.users.splice(at, 1);
      if (!env.slack.user_inbox.delete(user)) throw keyError(user);
      if (!env.slack.user_channels.delete(user)) throw keyError(user);
      return NONE;
    },
  },
];
