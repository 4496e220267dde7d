/**
 * `reward-mesh up --remote name=host:port,…`: reward services served elsewhere (any language) that join
 * the mesh through `reward-mesh serve --remote host:port`. `up` asks each one's `Describe` (waiting up to
 * 30 s for it to answer) for its domains, and generates its NATS user, `service-<name>`, with a service's
 * least privilege: its own domains' rollouts (durable consumers `<name>--<domain>`, filters checked by the
 * server), its own results (`mesh.rewards.*.<name>.*`) and dead letters, answers to `mesh.describe.<name>`.
 * The sidecar finds those credentials in `up`'s record (`mesh-record.ts`) when `NATS_URL` is unset.
 * @module
 */
import { connectRemoteService, type GrpcClientSecurity, type ServiceIdentity } from "@reward-mesh/sdk";
import { UsageError } from "../io.js";
import { SERVICES } from "../services.js";

/** One `--remote` entry. */
export interface RemoteSpec {
  readonly name: string;
  readonly address: string;
}

/** A remote service `up` generated a user for: its Describe's name and domains, and its address. */
export interface RemoteIdentity extends ServiceIdentity {
  readonly address: string;
}

/** How long `up` waits for a remote service to answer Describe. */
export const REMOTE_DESCRIBE_WAIT_MS = 30_000;

const NAME = /^[a-z][-a-z0-9]*$/;
const ADDRESS = /^[^\s:=,]+:\d+$|^\[[0-9a-fA-F:]+\]:\d+$/;

/** Parses `name=host:port,…`, naming what is wrong. */
export function parseRemotes(text: string): RemoteSpec[] {
  const out: RemoteSpec[] = [];
  for (const item of text.split(",").map((s) => s.trim())) {
    const at = item.indexOf("=");
    const name = item.slice(0, at);
    const address = item.slice(at + 1);
    if (at < 0 || !NAME.test(name) || !ADDRESS.test(address))
      throw new UsageError(`'--remote' takes name=host:port[,name=host:port...], got '${item}'`);
    if (SERVICES.some((s) => s.name === name))
      throw new UsageError(
        `'--remote' ${name}: this build has its own '${name}' service (a remote one would share its consumers and results); give the remote service another name`,
      );
    if (out.some((r) => r.name === name)) throw new UsageError(`'--remote' names '${name}' twice`);
    out.push({ name, address });
  }
  return out;
}

/** Asks each remote's Describe for its domains; its name must be the one given. */
export async function describeRemotes(
  remotes: readonly RemoteSpec[],
  security: GrpcClientSecurity,
): Promise<RemoteIdentity[]> {
  return Promise.all(
    remotes.map(async (r) => {
      let remote: Awaited<ReturnType<typeof connectRemoteService>>;
      try {
        remote = await connectRemoteService(r.address, { waitMs: REMOTE_DESCRIBE_WAIT_MS, security });
      } catch (err) {
        throw new Error(
          `'--remote ${r.name}=${r.address}': its Describe did not answer within ${REMOTE_DESCRIBE_WAIT_MS / 1000} s (start the remote service before 'reward-mesh up'): ${err instanceof Error ? err.message : String(err)}`,
          { cause: err },
        );
      }
      const { name, domains } = remote.definition;
      remote.close();
      if (name !== r.name)
        throw new UsageError(
          `'--remote ${r.name}=${r.address}': the service there is named '${name}' (its Describe), not '${r.name}'`,
        );
      return { name, domains: [...domains], address: r.address };
    }),
  );
}
