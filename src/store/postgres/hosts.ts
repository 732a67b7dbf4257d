import pg from "pg";
import { StoreError } from "../ports/errors.js";

// Multi-host connection strings, as libpq takes them
// (postgres://u@a:5432,b:5433/db?target_session_attrs=read-write), for a
// driver that has no such thing: node-postgres connects to one host and
// ignores target_session_attrs (brianc/node-postgres#1470; a pull request,
// #3643, is still open). What libpq does, this does at the same points:
// each new connection goes to the first host, in the order given, whose
// role fits the target; `prefer-standby` looks for a standby first, then
// takes any. The answer is remembered until a connection to that host fails
// or finds it in the wrong role (a failover), so a healthy pool asks once;
// each new connection still checks its own role before the pool hands it
// out, as libpq does. With no host fitting (the primary lost, the standby
// not yet promoted), a connection fails with NO_HOST: unavailable, never a
// connection to the wrong role.

export const TARGETS = ["any", "read-write", "read-only", "primary", "standby", "prefer-standby"] as const;
export type Target = (typeof TARGETS)[number];

export interface HostAddress {
  host: string;
  port: number;
}

export interface ParsedPgUrl {
  hosts: HostAddress[];
  /** target_session_attrs (libpq's default: any). */
  target: Target;
  /** A single-host URL for host `i`, without target_session_attrs (node-postgres would pass it to the server). */
  urlFor(i: number): string;
}

/** The error code of a connection that found no host in the wanted role. */
export const NO_HOST = "ENOHOST";

/** How long a probe of one host may take to connect and answer. */
const PROBE_TIMEOUT_MS = 2000;
/** A `prefer-standby` pool that settled on a primary looks for a standby again after this long. */
const PREFER_RECHECK_MS = 5000;

const URL_RE = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/i;

/**
 * The hosts and target of a postgres:// URL; undefined for a string that is
 * not one. Hosts are `host[:port]` or `[v6]:port`, comma-separated; a host
 * without a port takes the URL's `port` parameter, or 5432.
 */
export function parsePgUrl(url: string): ParsedPgUrl | undefined {
  const m = URL_RE.exec(url);
  if (m === null) return undefined;
  const [, scheme, userinfo = "", hostList, path, query = ""] = m;
  const params = new URLSearchParams(query.slice(1));
  const attrs = params.get("target_session_attrs") ?? "any";
  if (!(TARGETS as readonly string[]).includes(attrs)) {
    throw new StoreError(`target_session_attrs must be one of ${TARGETS.join(", ")}, got ${JSON.stringify(attrs)}`);
  }
  params.delete("target_session_attrs");
  const defaultPort = Number(params.get("port") ?? 5432);
  params.delete("port");
  const hosts = hostList!.split(",").map((h): HostAddress => {
    const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(h);
    if (v6 !== null) return { host: v6[1]!, port: v6[2] === undefined ? defaultPort : Number(v6[2]) };
    const colon = h.lastIndexOf(":");
    return colon < 0 ? { host: h, port: defaultPort } : { host: h.slice(0, colon), port: Number(h.slice(colon + 1)) };
  });
  for (const h of hosts) {
    if (!Number.isInteger(h.port) || h.port < 1 || h.port > 65535) throw new StoreError("a host of the PostgreSQL URL has an invalid port");
  }
  const rest = params.toString();
  return {
    hosts,
    target: attrs as Target,
    urlFor: (i) => {
      const h = hosts[i]!;
      const host = h.host.includes(":") ? `[${h.host}]` : h.host;
      return `${scheme}${userinfo}${host === "" ? "" : `${host}:${h.port}`}${path}${rest === "" ? "" : `?${rest}`}`;
    },
  };
}

/** The role of one server, as the probe query answers it. */
interface Role {
  standby: boolean;
  readOnly: boolean;
}

function fits(target: Target, role: Role, pass: "standby" | "any"): boolean {
  switch (target) {
    case "any":
      return true;
    case "read-write":
      return !role.readOnly;
    case "read-only":
      return role.readOnly;
    case "primary":
      return !role.standby;
    case "standby":
      return role.standby;
    case "prefer-standby":
      return pass === "any" || role.standby;
  }
}

/**
 * libpq's checks: read-write and read-only by transaction_read_only (a
 * primary being demoted by pg_auto_failover turns read-only before it
 * restarts as a standby), primary and standby by pg_is_in_recovery(). A
 * serving pool sets transaction_read_only on itself, so for it a server is
 * read-only exactly when it is in recovery.
 */
async function roleOf(client: pg.Client | pg.PoolClient, readOnlySession: boolean): Promise<Role> {
  const { rows } = await client.query<{ standby: boolean; read_only: boolean }>(
    "SELECT pg_is_in_recovery() AS standby, current_setting('transaction_read_only') = 'on' AS read_only",
  );
  const { standby, read_only } = rows[0]!;
  return { standby, readOnly: readOnlySession ? standby : read_only };
}

function noHost(target: Target, tried: string[]): Error {
  return Object.assign(new Error(`no PostgreSQL host is ${target} (tried ${tried.join(", ")})`), { code: NO_HOST });
}

/**
 * Which host a pool's new connections go to. One per pool: its memory of
 * the right host is shared by the pool's connections.
 */
export class HostChooser {
  #chosen: { index: number; until: number } | undefined;
  #probing: Promise<number> | undefined;

  constructor(
    readonly parsed: ParsedPgUrl,
    readonly target: Target,
    /** The pool's config (its connection string names a host; each probe gets its own). */
    readonly config: pg.ClientConfig,
    /** The pool's sessions are read-only by their own setting (serving pools). */
    readonly readOnlySession = false,
  ) {}

  /** The host index for the next connection (probing the hosts when none is known). */
  pick(): Promise<number> {
    const c = this.#chosen;
    if (c !== undefined && Date.now() < c.until) return Promise.resolve(c.index);
    this.#probing ??= this.#probe().finally(() => {
      this.#probing = undefined;
    });
    return this.#probing;
  }

  /** Forgets the chosen host (a connection to it failed, or found it in another role). */
  forget(index: number): void {
    if (this.#chosen?.index === index) this.#chosen = undefined;
  }

  /** Whether a connected client's role fits the target (the role may have changed since the probe). */
  async verify(client: pg.PoolClient, index: number): Promise<void> {
    if (this.target === "any") return;
    const role = await roleOf(client, this.readOnlySession);
    if (fits(this.target, role, "any")) return;
    this.forget(index);
    throw noHost(this.target, [this.#name(index)]);
  }

  #name(i: number): string {
    const h = this.parsed.hosts[i]!;
    return `${h.host}:${h.port}`;
  }

  async #probe(): Promise<number> {
    const { hosts } = this.parsed;
    if (this.target === "any" && hosts.length === 1) return this.#remember(0, false);
    const roles = new Map<number, Role | undefined>();
    const passes: ("standby" | "any")[] = this.target === "prefer-standby" ? ["standby", "any"] : ["any"];
    for (const pass of passes) {
      for (let i = 0; i < hosts.length; i++) {
        if (!roles.has(i)) roles.set(i, await this.#roleOfHost(i));
        const role = roles.get(i);
        if (role !== undefined && fits(this.target, role, pass)) return this.#remember(i, pass !== passes[0]);
      }
    }
    throw noHost(this.target, hosts.map((_, i) => this.#name(i)));
  }

  #remember(index: number, secondChoice: boolean): number {
    this.#chosen = { index, until: secondChoice ? Date.now() + PREFER_RECHECK_MS : Number.POSITIVE_INFINITY };
    return index;
  }

  /** The host's role, or undefined when it cannot be reached in time. */
  async #roleOfHost(i: number): Promise<Role | undefined> {
    const client = new pg.Client({ ...this.config, connectionString: this.parsed.urlFor(i), connectionTimeoutMillis: PROBE_TIMEOUT_MS, query_timeout: PROBE_TIMEOUT_MS });
    client.on("error", () => {});
    try {
      await client.connect();
      return await roleOf(client, this.readOnlySession);
    } catch {
      return undefined;
    } finally {
      void client.end().catch(() => {});
    }
  }
}

/**
 * The pool options that send each new connection to the host `chooser`
 * picks: a Client class that asks it before connecting, and an onConnect
 * check of the connection's role.
 */
export function choosingPoolOptions(chooser: HostChooser): Pick<pg.PoolConfig, "Client" | "onConnect"> {
  const hostOf = new WeakMap<object, number>();
  class ChoosingClient extends pg.Client {
    override connect(): Promise<pg.Client>;
    override connect(callback: (err: Error | null, c?: pg.Client) => void): void;
    override connect(callback?: (err: Error | null, c?: pg.Client) => void): Promise<pg.Client> | void {
      const done = chooser.pick().then((index) => {
        const h = chooser.parsed.hosts[index]!;
        hostOf.set(this, index);
        // Client reads host and port when it connects (node-postgres lib/client.js _connect).
        this.host = h.host;
        this.port = h.port;
        const params = (this as unknown as { connectionParameters: { host: string; port: number } }).connectionParameters;
        params.host = h.host;
        params.port = h.port;
        return super.connect().catch((err: unknown) => {
          chooser.forget(index);
          throw err;
        });
      });
      if (callback === undefined) return done;
      done.then((c) => callback(null, c), (err: Error) => callback(err));
    }
  }
  return {
    Client: ChoosingClient as unknown as typeof pg.Client,
    // pg-pool awaits a promise from onConnect, ending the connection if it rejects (its types say void).
    onConnect: ((client: pg.PoolClient) => chooser.verify(client, hostOf.get(client) ?? 0)) as unknown as pg.PoolConfig["onConnect"],
  };
}
