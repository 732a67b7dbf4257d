import { type ChildProcess, spawn, spawnSync } from "node:child_process";
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

export interface ServeProcess {
  url: string;
  child: ChildProcess;
  /** The last few KB of what it printed (for errors). */
  tail(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it exited. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts `marketdata serve ARGS` and resolves once it prints its listening
 * line (with --workers N > 1, the primary's, after every worker), draining
 * its output meanwhile so a full pipe never stalls it. The one way the
 * benchmarks and the deployment scripts start a server.
 */
export function startServe(args: string[], options: { timeoutMs?: number } = {}): Promise<ServeProcess> {
  if (!args.includes("--workers")) throw new Error("startServe: say --workers (the default depends on the machine)");
  const lone = args[args.indexOf("--workers") + 1] === "1";
  const child = spawn(process.execPath, [BIN, "serve", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let tail = "";
  const stop = (graceMs = 10_000) =>
    new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      child.once("exit", () => done());
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), graceMs).unref();
    });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`serve did not start within ${(options.timeoutMs ?? 60_000) / 1000} s`)), options.timeoutMs ?? 60_000);
    const fail = (err: Error) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`${err.message}; output:\n${tail}`));
    };
    const onExit = (code: number | null) => fail(new Error(`serve exited with ${code}`));
    const onData = (chunk: Buffer) => {
      tail = (tail + chunk.toString()).slice(-4000);
      // One worker: its own line. More: the primary's, which names them (each worker prints its own first).
      const m = (lone ? /"msg":"Server listening at (http:\/\/[\d.:[\]]+)"/ : /"workers":\d+,"msg":"Server listening at (http:\/\/[\d.:[\]]+)"/).exec(tail);
      if (m === null) return;
      clearTimeout(timer);
      child.off("exit", onExit);
      resolve({ url: m[1]!, child, tail: () => tail, stop });
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", onExit);
  });
}
