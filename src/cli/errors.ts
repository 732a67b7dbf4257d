import { ConfigError } from "../config/checks.js";

/** A failure the user can fix: printed as one line, exit status 1, no stack. */
export class CliError extends Error {}

/**
 * The one line a command prints for `err`: the user's mistake as said, a
 * store's failure in its own words (the store module is loaded only now),
 * anything else as an internal error, whose stack is returned apart.
 */
export async function errorLine(err: unknown): Promise<{ line: string; stack?: string }> {
  if (err instanceof CliError || err instanceof ConfigError) return { line: err.message };
  const { storeErrorLine } = await import("../store/error-line.js");
  const store = storeErrorLine(err);
  if (store !== undefined) return { line: store };
  return {
    line: `internal error: ${err instanceof Error ? err.message : String(err)}`,
    ...(err instanceof Error && err.stack !== undefined ? { stack: err.stack } : {}),
  };
}
