/**
 * The reward services this build ships, by name: discovered from each service package's
 * `rewardMesh.service` manifest (`@reward-mesh/sdk` `discoverServices`), never listed here. The CLI may
 * import services (it is not one); services never import each other.
 * @module
 */
import {
  type DiscoveredService,
  didYouMean,
  discoverServices,
  loadDiscoveredService,
  type RewardServiceDefinition,
} from "@reward-mesh/sdk";

/** How the CLI starts and loads one service. */
export interface ServiceEntry {
  readonly name: string;
  /** Environment prefix of its options (e.g. `LENGTH` → `LENGTH_GRPC_PORT`). */
  readonly envPrefix: string;
  readonly defaultPort: number;
  /** Rollout domains it consumes as configured (its manifest's, or its `domainsEnv` variable's list). */
  readonly domains: readonly string[];
  /**
   * Whether `up` without `--services` and the demo start it (its manifest's `defaultEnabled`, default
   * true); a service that is not is started only when named.
   */
  readonly defaultEnabled: boolean;
  /** Absolute path of its `main.ts` (what `serve` and `up` run). */
  readonly mainPath: () => string;
  /** Its definition configured from the environment, for in-process scoring. */
  readonly load: () => Promise<RewardServiceDefinition>;
}

function entryOf(s: DiscoveredService): ServiceEntry {
  return {
    name: s.manifest.name,
    envPrefix: s.manifest.envPrefix,
    defaultPort: s.manifest.defaultPort,
    domains: s.domains,
    defaultEnabled: s.manifest.defaultEnabled ?? true,
    mainPath: () => s.mainPath,
    load: () => loadDiscoveredService(s),
  };
}

/** Every available service (sorted by name), discovered once when the CLI loads. */
export const SERVICES: readonly ServiceEntry[] = discoverServices().map(entryOf);

/** The services started when none are named: those whose manifest does not say `defaultEnabled: false`. */
export function defaultServiceNames(): string[] {
  return SERVICES.filter((s) => s.defaultEnabled).map((s) => s.name);
}

/** Thrown for an unknown service name; lists the known ones. */
export class UnknownServiceError extends Error {
  override readonly name = "UnknownServiceError";
}

/** The entry named `name`; an unknown name is an error suggesting the nearest service and listing all. */
export function serviceEntry(name: string): ServiceEntry {
  const e = SERVICES.find((s) => s.name === name);
  if (!e)
    throw new UnknownServiceError(
      `unknown service '${name}'${didYouMean(
        name,
        SERVICES.map((s) => s.name),
      )}; available: ${SERVICES.map((s) => s.name).join(", ")} (a service is a workspace package with a 'rewardMesh.service' manifest; see docs/reward-services.md)`,
    );
  return e;
}
