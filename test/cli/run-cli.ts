import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import http from "node:http";
import { BIN } from "../../src/cli/run-sync.js";

export { BIN };

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], input?: string, env: NodeJS.ProcessEnv = {}): CliResult {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: "utf8",
    input,
    env: { ...process.env, ...env },
    timeout: 120_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export function spawnCli(args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
}

/** Resolves with the first match of `re` in the child's stdout+stderr. */
export function waitForOutput(child: ChildProcess, re: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${re}; output:\n${seen}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const m = seen.match(re);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before ${re}; output:\n${seen}`));
    });
  });
}

/** A Connect POST whose body is only half sent until `finish` is called. */
export function slowCall(url: string, key: string, contractAddress: string) {
  const body = JSON.stringify({ contractAddress });
  const agent = new http.Agent({ keepAlive: false });
  let finish = () => {};
  const done = new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = http.request(`${url}/marketdata.v1.CollectionService/GetCollectionStats`, {
      method: "POST",
      agent,
      headers: { "content-type": "application/json", "x-api-key": key, "content-length": Buffer.byteLength(body) },
    });
    req.on("response", (res) => {
      let text = "";
      res.on("data", (c: Buffer) => (text += c.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.write(body.slice(0, 10));
    finish = () => req.end(body.slice(10));
  });
  return { done, finish: () => finish() };
}

/**
 * Starts `import --db db sales file` and SIGKILLs it once its transaction has
 * written a good part of its pages to the WAL; resolves with the signal.
 */
export async function killImportMidway(db: string, file: string): Promise<NodeJS.Signals | null> {
  const child = spawn(process.execPath, [BIN, "import", "--db", db, "sales", file], { stdio: "ignore" });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
  const deadline = Date.now() + 60_000;
  while (!(existsSync(`${db}-wal`) && statSync(`${db}-wal`).size > 8_000_000) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  child.kill("SIGKILL");
  return exited;
}
