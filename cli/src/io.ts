/**
 * Small I/O helpers for commands: ordered bounded-concurrency mapping, flag parsing, usage errors.
 * @module
 */
/**
 * Maps `items` through `fn` with at most `window` in flight, delivering results to `emit` in input
 * order (so output line N answers input line N).
 */
export async function orderedMap<T, R>(
  items: AsyncIterable<T>,
  window: number,
  fn: (item: T, index: number) => Promise<R>,
  emit: (result: R, index: number) => void,
): Promise<void> {
  const queue: Array<{ p: Promise<R>; i: number }> = [];
  let i = 0;
  for await (const item of items) {
    const p = fn(item, i);
    p.catch(() => {});
    queue.push({ p, i: i++ });
    while (queue.length >= window) {
      const head = queue.shift()!;
      emit(await head.p, head.i);
    }
  }
  for (const head of queue) emit(await head.p, head.i);
}

/** A usage error: printed as one line, exit code 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Parses `--flag value` / `--flag=value` / boolean flags; positional arguments are returned apart. */
export function parseFlags(
  args: readonly string[],
  spec: Readonly<Record<string, "string" | "boolean">>,
): { flags: Record<string, string | boolean>; positional: string[] } {
  const flags: Record<string, string | boolean> = {};
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith("--")) {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf("=");
    const name = eq >= 0 ? a.slice(2, eq) : a.slice(2);
    const kind = Object.hasOwn(spec, name) ? spec[name] : undefined; // not '--constructor' via the prototype
    if (!kind) throw new UsageError(`unknown option '--${name}'`);
    if (kind === "boolean") {
      if (eq >= 0) throw new UsageError(`option '--${name}' takes no value`);
      flags[name] = true;
    } else {
      const v = eq >= 0 ? a.slice(eq + 1) : args[++i];
      if (v === undefined || v === "") throw new UsageError(`option '--${name}' needs a value`);
      flags[name] = v;
    }
  }
  return { flags, positional };
}
