/**
 * `reward-mesh check`: a mesh-wide look at the bus at `NATS_URL` (unset: the mesh `reward-mesh up`
 * recorded, see `mesh-record.ts`) — the durable consumers of
 * `MESH_ROLLOUTS` (one per service and domain, with their backlog) and the orphan subjects: stored
 * rollouts on a domain no service consumes, which would never be scored. Exit code 0 when there is no
 * orphan, 1 when there is (so a script or a CI job can gate on it).
 * @module
 */
import type { Writable } from "node:stream";
import { inspectRollouts, Streams } from "@reward-mesh/sdk";
import type { CliConfig } from "../config.js";
import { type CommandSpec, parseCommand, usageLine } from "../args.js";
import { UsageError } from "../io.js";
import { meshBusOptions } from "./mesh-record.js";

/** The check command (parsing and `--help` come from this table). */
export const CHECK_COMMAND: CommandSpec = {
  name: "check",
  summary: "the bus: consumers per rollout domain, orphan subjects (exit 1 if any)",
  description:
    "Look at the bus at NATS_URL (unset: the mesh reward-mesh up recorded): the consumers of each rollout domain with their backlog, and orphan\n" +
    "subjects (stored rollouts no service consumes). Exit 0 when there is no orphan, 1 when there is.",
  options: {},
  notes: [
    "Connects with the NATS_* credentials of the environment (NATS_NKEY_SEED_FILE, NATS_CREDS_FILE, ...);\n" +
      "NATS_URL unset: to the mesh reward-mesh up recorded (<auth dir>/mesh.json), as its trainer user.",
  ],
  examples: ["NATS_URL=nats://127.0.0.1:4222 reward-mesh check"],
};

/** Usage of the check command. */
export const CHECK_USAGE = usageLine(CHECK_COMMAND);

/** Runs the command; returns the exit code. */
export async function runCheck(args: readonly string[], cli: CliConfig, stdout: Writable): Promise<number> {
  if (parseCommand(CHECK_COMMAND, args).positionals.length > 0) throw new UsageError(CHECK_USAGE);
  const bus = await meshBusOptions(cli, { kind: "trainer" });
  const { stream, consumers, orphans } = await inspectRollouts(bus.natsUrl, bus.auth);
  stdout.write(`NATS JetStream  ${bus.natsUrl}\n`);
  if (!stream) {
    stdout.write(`no ${Streams.rollouts} stream yet (nothing has started on this bus): no orphans\n`);
    return 0;
  }
  stdout.write(`consumers of ${Streams.rollouts}:${consumers.length === 0 ? " none" : ""}\n`);
  for (const c of consumers) {
    stdout.write(
      `  ${c.name.padEnd(28)} ${c.filters.join(",").padEnd(32)} pending ${c.pending}, unacked ${c.ackPending}\n`,
    );
  }
  if (orphans.length === 0) {
    stdout.write("orphan subjects: none (every stored rollout's domain has a consumer)\n");
    return 0;
  }
  stdout.write("orphan subjects (stored rollouts no service consumes; they are never scored):\n");
  for (const o of orphans)
    stdout.write(`  ${o.subject.padEnd(40)} ${o.messages} message(s), domain '${o.domain}'\n`);
  stdout.write(`orphan domains: ${[...new Set(orphans.map((o) => o.domain))].join(", ")}\n`);
  return 1;
}
