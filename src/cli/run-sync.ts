import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

// The marketdata CLI as a child process, for the scripts that drive it as an
// operator would (the benchmarks, the replicated deployment).

export const BIN = fileURLToPath(new URL("../bin/marketdata.js", import.meta.url));

/** Runs the CLI to completion and returns what it printed; an error carrying its stderr if it fails. */
export function runCliSync(args: string[], timeoutMs?: number): { stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    ...(timeoutMs === undefined ? {} : { timeout: timeoutMs }),
  });
  if (r.error !== undefined) throw new Error(`marketdata ${args[0]} failed: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`marketdata ${args[0]} failed: ${(r.stderr || `exit ${r.status ?? r.signal}`).trim()}`);
  return { stdout: r.stdout, stderr: r.stderr };
}
