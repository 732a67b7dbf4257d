import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

// The marketdata CLI as a child process, for the scripts that drive it as an
// operator would (the benchmarks, the replicated deployment).

export const BIN = fileURLToPath(new URL("../bin/marketdata.js", import.meta.url));

/** Runs the CLI to completion and returns what it printed; an error carrying its stderr if it fails. */
export function runCliSync(args: string[], timeoutMs?: number, /** Another build's command (a bench's baseline); this one's by default. */ bin = BIN): { stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], {
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
  /** Everything it printed so far, stdout and stderr (kept once it exited). */
  output(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it exited. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts `marketdata serve ARGS` and resolves once it prints its listening
 * line (with --workers N > 1, the primary's, after every worker). Its output
 * goes to a file, as an operator's log would, not through a pipe this
 * process must drain: a load generator reading the server's request lines
 * would spend its own CPU on them. The one way the benchmarks and the
 * deployment scripts start a server.
 */
export function startServe(
  args: string[],
  options: {
    timeoutMs?: number;
    env?: NodeJS.ProcessEnv;
    /** Another build's command (bench:serve-ab's baseline); this one's by default. */
    bin?: string;
    /** Node's own flags (bench:profile's --cpu-prof). */
    nodeArgs?: string[];
  } = {},
): Promise<ServeProcess> {
  const workers = args.includes("--workers") ? args[args.indexOf("--workers") + 1] : options.env?.WORKERS;
  if (workers === undefined) throw new Error("startServe: say --workers or WORKERS (the default depends on the machine)");
  const lone = workers === "1";
  const dir = mkdtempSync(join(tmpdir(), "marketdata-serve-"));
  const logFile = join(dir, "serve.log");
  const out = openSync(logFile, "w");
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), options.bin ?? BIN, "serve", ...args], {
    stdio: ["ignore", out, out],
    ...(options.env === undefined ? {} : { env: { ...process.env, ...options.env } }),
  });
  closeSync(out);
  let final: string | undefined;
  const output = (): string => {
    if (final !== undefined) return final;
    try {
      return readFileSync(logFile, "utf8");
    } catch {
      return "";
    }
  };
  // Registered first, so the output is kept before anyone else hears of the exit.
  child.once("exit", () => {
    final = output();
    rmSync(dir, { recursive: true, force: true });
  });
  const stop = (graceMs = 10_000) =>
    new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      child.once("exit", () => done());
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), graceMs).unref();
    });
  // One worker: its own line. More: the primary's, which names them (each worker prints its own first).
  const listening = lone ? /"msg":"Server listening at (http:\/\/[\d.:[\]]+)"/ : /"workers":\d+,"msg":"Server listening at (http:\/\/[\d.:[\]]+)"/;
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const fail = (err: Error) => {
      clearInterval(poll);
      child.kill("SIGKILL");
      reject(new Error(`${err.message}; output:\n${output().slice(-4000)}`));
    };
    const onExit = (code: number | null) => fail(new Error(`serve exited with ${code}`));
    const poll = setInterval(() => {
      const m = listening.exec(output());
      if (m !== null) {
        clearInterval(poll);
        child.off("exit", onExit);
        resolve({ url: m[1]!, child, output, stop });
      } else if (performance.now() - started > (options.timeoutMs ?? 60_000)) {
        fail(new Error(`serve did not start within ${(options.timeoutMs ?? 60_000) / 1000} s`));
      }
    }, 25);
    child.once("exit", onExit);
  });
}
