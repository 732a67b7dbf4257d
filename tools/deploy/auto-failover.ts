import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, openSync, closeSync, readFileSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import pg from "pg";

// A pg_auto_failover formation on one machine (issue 37): a monitor and two
// data nodes, three PostgreSQL clusters on their own ports and directories,
// each run by its own `pg_autoctl run` (Debian's postgresql-15-auto-failover).
// pg_auto_failover does the work: the first node becomes the primary, the
// second a synchronous standby (synchronous_standby_names 'ANY 1 (...)',
// synchronous_commit on: a commit returns once the standby has the WAL),
// and when the primary fails the monitor promotes the standby. This only
// runs its commands in order, as an operator would, and reads its state.
// The failover drill (deploy/failover.ts) and its test use it.

const RUN_AS = "postgres";
/** pg_autoctl's command, and the PostgreSQL binaries it needs on PATH (Debian keeps them per major version). */
const PG_AUTOCTL = "/usr/bin/pg_autoctl";

export interface FormationOptions {
  /** A directory of its own (created; removed by destroy()). */
  dir: string;
  /** Ports of the monitor and of the two nodes. */
  ports: [number, number, number];
  /** The database the nodes hold. */
  dbname: string;
  log?: (line: string) => void;
}

export interface NodeInfo {
  name: string;
  port: number;
  /** pg_auto_failover's states: reported (what the node says it is) and assigned (what the monitor wants). */
  reported: string;
  assigned: string;
}

/** Whether this machine has pg_auto_failover (Debian's postgresql-15-auto-failover). */
export function hasAutoFailover(): boolean {
  return existsSync(PG_AUTOCTL) && existsSync(join(pgBin(), "pg_ctl"));
}

function pgBin(): string {
  return "/usr/lib/postgresql/15/bin";
}

export class Formation {
  readonly nodes: { name: string; port: number; dir: string }[];
  readonly monitor: { port: number; dir: string };
  readonly #children = new Map<string, ChildProcess>();
  readonly #env: NodeJS.ProcessEnv;
  readonly #log: (line: string) => void;

  constructor(readonly options: FormationOptions) {
    const [m, a, b] = options.ports;
    this.monitor = { port: m, dir: join(options.dir, "monitor") };
    this.nodes = [
      { name: "node1", port: a, dir: join(options.dir, "node1") },
      { name: "node2", port: b, dir: join(options.dir, "node2") },
    ];
    // pg_autoctl keeps its configuration and state under XDG directories: this formation's own.
    this.#env = {
      PATH: `${pgBin()}:${process.env.PATH ?? "/usr/bin:/bin"}`,
      XDG_CONFIG_HOME: join(options.dir, "xdg", "config"),
      XDG_DATA_HOME: join(options.dir, "xdg", "data"),
      XDG_RUNTIME_DIR: join(options.dir, "xdg", "run"),
      HOME: options.dir,
    };
    this.#log = options.log ?? (() => {});
  }

  /** The monitor's URL (pg_autoctl's nodes register there). */
  get monitorUrl(): string {
    return `postgres://autoctl_node@127.0.0.1:${this.monitor.port}/pg_auto_failover?sslmode=disable`;
  }

  /** A libpq multi-host URL of both nodes, for `user`, with a target_session_attrs. */
  url(target: "read-write" | "prefer-standby" | "any", user = RUN_AS): string {
    const hosts = this.nodes.map((n) => `127.0.0.1:${n.port}`).join(",");
    return `postgres://${user}@${hosts}/${this.options.dbname}?target_session_attrs=${target}`;
  }

  /** One node's own URL. */
  nodeUrl(name: string, user = RUN_AS): string {
    return `postgres://${user}@127.0.0.1:${this.#node(name).port}/${this.options.dbname}`;
  }

  /**
   * Creates the monitor, then the first node (the primary), then the second
   * (a standby made by pg_basebackup), each run by its own keeper; resolves
   * once the monitor reports one primary and one secondary.
   */
  async create(timeoutMs = 120_000): Promise<void> {
    const { dir } = this.options;
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(join(dir, "xdg", "run"), { recursive: true, mode: 0o700 });
    this.#ownDir(dir);
    const common = ["--hostname", "127.0.0.1", "--listen", "127.0.0.1", "--auth", "trust", "--no-ssl"];
    this.#log(`creating the monitor on port ${this.monitor.port}`);
    this.#autoctl(["create", "monitor", "--pgdata", this.monitor.dir, "--pgport", String(this.monitor.port), ...common]);
    this.#run("monitor", this.monitor.dir);
    await this.#until(async () => (await this.#query(this.monitor.port, "pg_auto_failover", "SELECT 1")) !== undefined, 30_000, "the monitor to accept connections");
    for (const [i, node] of this.nodes.entries()) {
      this.#log(`creating ${node.name} on port ${node.port}`);
      this.#autoctl([
        "create", "postgres", "--pgdata", node.dir, "--pgport", String(node.port), "--name", node.name,
        "--dbname", this.options.dbname, "--monitor", this.monitorUrl, ...common,
      ]);
      this.#run(node.name, node.dir);
      const want = i === 0 ? ["single"] : ["primary", "secondary"];
      await this.#until(async () => {
        const states = await this.state();
        return want.every((s) => states.some((n) => n.reported === s && n.assigned === s));
      }, timeoutMs, `${node.name} to join (${want.join(", ")})`);
    }
  }

  /** Every node's states, as the monitor has them. */
  async state(): Promise<NodeInfo[]> {
    const rows = await this.#query<{ nodename: string; nodeport: number; reportedstate: string; goalstate: string }>(
      this.monitor.port,
      "pg_auto_failover",
      "SELECT nodename, nodeport, reportedstate::text AS reportedstate, goalstate::text AS goalstate FROM pgautofailover.node ORDER BY nodeid",
    );
    return (rows ?? []).map((r) => ({ name: r.nodename, port: r.nodeport, reported: r.reportedstate, assigned: r.goalstate }));
  }

  /** The node that takes writes now (asked of the nodes themselves), or undefined. */
  async primary(): Promise<{ name: string; port: number } | undefined> {
    for (const n of this.nodes) {
      const r = await this.#query<{ r: boolean }>(n.port, this.options.dbname, "SELECT pg_is_in_recovery() AS r");
      if (r !== undefined && r[0]?.r === false) return { name: n.name, port: n.port };
    }
    return undefined;
  }

  /** The PID of a node's postmaster (its postmaster.pid's first line). */
  postmasterPid(name: string): number {
    return Number(readFileSync(join(this.#node(name).dir, "postmaster.pid"), "utf8").split("\n")[0]);
  }

  /** SIGKILL of a node's postmaster only (its keeper restarts it, as whatever the monitor then assigns). */
  killPostmaster(name: string): number {
    const pid = this.postmasterPid(name);
    process.kill(pid, "SIGKILL");
    return pid;
  }

  /**
   * SIGKILL of a whole node: its keeper and its PostgreSQL (the process
   * group), as when its machine is lost; nothing restarts it until
   * restartNode().
   */
  async killNode(name: string): Promise<void> {
    const child = this.#children.get(name);
    let pid: number | undefined;
    try {
      pid = name === "monitor" ? Number(readFileSync(join(this.monitor.dir, "postmaster.pid"), "utf8").split("\n")[0]) : this.postmasterPid(name);
    } catch {
      // not running
    }
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      process.kill(-child.pid, "SIGKILL");
      await exited;
    }
    if (pid !== undefined) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone with its group
      }
    }
  }

  /** Starts a node's (or the monitor's) keeper again after killNode() or stop(). */
  restart(name: string): void {
    this.#run(name, name === "monitor" ? this.monitor.dir : this.#node(name).dir);
  }

  /** Stops a keeper (and its PostgreSQL) cleanly: the monitor, say, so that nothing fails over. */
  async stop(name: string): Promise<void> {
    const child = this.#children.get(name);
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    process.kill(-child.pid!, "SIGTERM");
    const timer = setTimeout(() => process.kill(-child.pid!, "SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  }

  /** Waits until `test` holds for the monitor's states. */
  async waitForStates(test: (nodes: NodeInfo[]) => boolean, timeoutMs: number, what: string): Promise<NodeInfo[]> {
    let last: NodeInfo[] = [];
    await this.#until(async () => test((last = await this.state())), timeoutMs, what, () => JSON.stringify(last));
    return last;
  }

  /**
   * Ends every keeper and its PostgreSQL at once (SIGKILL of each process
   * group, then an immediate stop of any server left), then removes the
   * directory: the formation's data is thrown away, so nothing needs a
   * clean shutdown.
   */
  async destroy(): Promise<void> {
    for (const name of [...this.#children.keys()]) {
      await this.killNode(name).catch(() => {});
      this.#children.delete(name);
    }
    for (const d of [...this.nodes.map((n) => n.dir), this.monitor.dir]) {
      if (existsSync(join(d, "postmaster.pid"))) {
        try {
          this.#as(join(pgBin(), "pg_ctl"), ["-D", d, "-m", "immediate", "-w", "stop"], 30_000);
        } catch {
          // already stopped
        }
      }
    }
    rmSync(this.options.dir, { recursive: true, force: true });
  }

  #node(name: string) {
    const n = this.nodes.find((x) => x.name === name);
    if (n === undefined) throw new Error(`no node ${name}`);
    return n;
  }

  /** The directory, owned by the server's user when run as root (PostgreSQL refuses to run as root). */
  #ownDir(dir: string): void {
    if (process.getuid?.() !== 0) return;
    const parent = dirname(dir);
    chmodSync(parent, statSync(parent).mode | 0o711);
    const uid = Number(execFileSync("id", ["-u", RUN_AS], { encoding: "utf8" }));
    const gid = Number(execFileSync("id", ["-g", RUN_AS], { encoding: "utf8" }));
    for (const d of [dir, join(dir, "xdg"), join(dir, "xdg", "run")]) chownSync(d, uid, gid);
  }

  #as(cmd: string, args: string[], timeoutMs: number): string {
    const root = process.getuid?.() === 0;
    const [file, argv] = root ? ["runuser", ["-u", RUN_AS, "--", "env", ...Object.entries(this.#env).map(([k, v]) => `${k}=${v}`), cmd, ...args]] : [cmd, args];
    try {
      return execFileSync(file, argv, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: timeoutMs, env: { ...process.env, ...this.#env } });
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      const tail = (e.stderr || e.message).trim().split("\n").slice(-8).join("\n");
      throw new Error(`${cmd} ${args.slice(0, 2).join(" ")} failed:\n${tail}`);
    }
  }

  #autoctl(args: string[]): void {
    this.#as(PG_AUTOCTL, args, 120_000);
  }

  /** Starts `pg_autoctl run` for a data directory, its output in a log file beside it. */
  #run(name: string, pgdata: string): void {
    const logFile = join(this.options.dir, `${name}.log`);
    const out = openSync(logFile, "a");
    const root = process.getuid?.() === 0;
    const args = ["run", "--pgdata", pgdata];
    const [file, argv] = root ? ["runuser", ["-u", RUN_AS, "--", "env", ...Object.entries(this.#env).map(([k, v]) => `${k}=${v}`), PG_AUTOCTL, ...args]] : [PG_AUTOCTL, args];
    // A process group of its own: killNode() ends the keeper and its PostgreSQL at once, as a lost machine would.
    const child = spawn(file, argv, { stdio: ["ignore", out, out], env: { ...process.env, ...this.#env }, detached: true });
    closeSync(out);
    this.#children.set(name, child);
  }

  /** The last lines a keeper wrote (for errors). */
  logTail(name: string, lines = 15): string {
    try {
      return readFileSync(join(this.options.dir, `${name}.log`), "utf8").trim().split("\n").slice(-lines).join("\n");
    } catch {
      return "";
    }
  }

  async #query<R extends pg.QueryResultRow>(port: number, database: string, sql: string): Promise<R[] | undefined> {
    const client = new pg.Client({ host: "127.0.0.1", port, user: RUN_AS, database, connectionTimeoutMillis: 2000, query_timeout: 5000 });
    client.on("error", () => {});
    try {
      await client.connect();
      return (await client.query<R>(sql)).rows;
    } catch {
      return undefined;
    } finally {
      void client.end().catch(() => {});
    }
  }

  async #until(probe: () => Promise<boolean>, timeoutMs: number, what: string, detail: () => string = () => ""): Promise<void> {
    const started = Date.now();
    while (!(await probe())) {
      if (Date.now() - started > timeoutMs) {
        const logs = ["monitor", ...this.nodes.map((n) => n.name)].map((n) => `${n}:\n${this.logTail(n, 6)}`).join("\n");
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} ${detail()}\n${logs}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
