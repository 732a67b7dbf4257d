import pg from "pg";
import { StoreError, StoreUnavailableError } from "../ports/errors.js";
import { unavailable } from "./statements.js";
import { choosingPoolOptions, HostChooser, parsePgUrl, type Target } from "./hosts.js";
import { PG_MIGRATIONS } from "./migrations.js";

// PostgreSQL connections and versioned migrations. The applied version is a
// row of schema_migrations; migrate() runs the missing steps, each in its own
// transaction, under an advisory lock so that two importers starting at
// once do not both migrate.

/** Any number: the lock only has to be the same for every migrating process. */
const MIGRATION_LOCK = 0x6d64_6d67;

export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

/** The URL without its password, for messages (a multi-host URL too: hosts.ts). */
export function redactUrl(url: string): string {
  try {
    // Several hosts are no WHATWG URL: the password is cut out of the text.
    if ((parsePgUrl(url)?.hosts.length ?? 1) > 1) return url.replace(/^(postgres(?:ql)?:\/\/[^:@/]*:)[^@/]*@/i, "$1***@");
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "postgres://…";
  }
}

/**
 * int8 as a JavaScript number: every bigint column of this schema (epoch
 * seconds, blocks, counts, ids) stays far below 2^53. numeric (asset ids,
 * wei) keeps arriving as exact decimal text.
 */
const TYPES = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === pg.types.builtins.INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
};

export interface PoolOptions {
  /** Connections at most. */
  max?: number;
  /** Every transaction read-only (serve): a replica or the primary, it never writes. */
  readOnly?: boolean;
  /**
   * Serving: how long a query may run (PostgreSQL's statement_timeout) and,
   * a little longer, how long this client waits for its answer, so that a
   * query sent before a network partition ends instead of holding its
   * connection forever. DEFAULT_QUERY_TIMEOUT_MS with readOnly when absent.
   */
  queryTimeoutMs?: number;
  /**
   * A writer's sessions commit only locally by default, and writeTransaction
   * (copy.ts) makes each of its transactions wait for the synchronous
   * standby (SET LOCAL synchronous_commit = on). Why: a session that made a
   * temporary table (the ingest writer's staging tables, kept per
   * connection) drops it when it ends, in a commit of its own; on a primary
   * whose synchronous standby is gone (a failover: the old primary restarted
   * by its keeper, then demoted) that commit waits forever, and so does the
   * shutdown pg_auto_failover needs to demote it (seen: pg_ctl stop failing
   * after 60 s, the promotion delayed to the monitor's 30 s demote timeout).
   */
  localSessionCommits?: boolean;
}

/** Pools whose write transactions ask for synchronous commit themselves (PoolOptions.localSessionCommits). */
export const SYNC_WRITE_POOLS = new WeakSet<pg.Pool>();

/**
 * The target_session_attrs a pool's connections look for (hosts.ts). Reads
 * take the URL's own (libpq's default: any); a writer on a URL of several
 * hosts always wants the one that takes writes, whatever the URL says, so
 * that one --db (say, the hosts of a failover pair with prefer-standby)
 * serves both. A writer on one host keeps it: a replica refuses writes in
 * its own words.
 */
function targetOf(declared: Target, hosts: number, readOnly: boolean): Target {
  return readOnly || hosts === 1 ? declared : "read-write";
}

/** A read-only pool's query bound when its opener names none (tests, tools); serve always passes --store-timeout's. */
export const DEFAULT_QUERY_TIMEOUT_MS = 10_000;
/** The client waits this much longer than statement_timeout: the server's own cancel (57014) normally comes first. */
const CLIENT_TIMEOUT_SLACK_MS = 1000;

export function openPool(url: string, maxOrOptions: number | PoolOptions = 10): pg.Pool {
  const o = typeof maxOrOptions === "number" ? { max: maxOrOptions } : maxOrOptions;
  const queryTimeoutMs = o.queryTimeoutMs ?? (o.readOnly ? DEFAULT_QUERY_TIMEOUT_MS : undefined);
  // The sessions' settings, one string (two spreads of `options` would keep only the last).
  const sessionOptions = [
    ...(o.readOnly ? [`-c default_transaction_read_only=on -c statement_timeout=${queryTimeoutMs}`] : []),
    ...(o.localSessionCommits ? ["-c synchronous_commit=local"] : []),
  ].join(" ");
  const parsed = parsePgUrl(url);
  const target = parsed === undefined ? "any" : targetOf(parsed.target, parsed.hosts.length, o.readOnly === true);
  const config = {
    connectionString: parsed === undefined ? url : parsed.urlFor(0),
    max: o.max ?? 10,
    types: TYPES,
    // Waiting for a free connection is bounded: an unreachable server becomes an answer (unavailable), not a hang.
    connectionTimeoutMillis: 5000,
    // A peer that vanished (a partition, a host gone) is found by the kernel on idle connections too.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    // Serving: every transaction read-only, and no query may outlast a request's deadline.
    ...(sessionOptions === "" ? {} : { options: sessionOptions }),
    // A query whose answer never comes (the network, not the server) fails here; its connection is discarded.
    ...(queryTimeoutMs === undefined ? {} : { query_timeout: queryTimeoutMs + CLIENT_TIMEOUT_SLACK_MS }),
  };
  // One host in the URL and no target: node-postgres's own connections, untouched.
  const choosing = parsed !== undefined && (parsed.hosts.length > 1 || target !== "any");
  const pool = new pg.Pool(choosing ? { ...config, ...choosingPoolOptions(new HostChooser(parsed, target, { ...config, connectionString: parsed.urlFor(0) }, o.readOnly === true)) } : config);
  // An idle client's error (the server restarted) must not end the process; the next query reconnects.
  if (o.localSessionCommits) SYNC_WRITE_POOLS.add(pool);
  pool.on("error", () => {});
  // Nor a checked-out client's (a transaction's connection when its server
  // dies: node-postgres emits 'error' on the client, which the pool listens
  // for only while the client is idle); the client's queries reject anyway.
  pool.on("connect", (client) => client.on("error", () => {}));
  return pool;
}

export async function pgSchemaVersion(client: pg.Pool | pg.PoolClient): Promise<number> {
  const exists = await client.query<{ t: string | null }>("SELECT to_regclass('schema_migrations') AS t");
  if (exists.rows[0]?.t === null) return 0;
  const r = await client.query<{ v: number | null }>("SELECT max(version) AS v FROM schema_migrations");
  return r.rows[0]?.v ?? 0;
}

/** Applies the missing migrations; returns the versions before and after. */
export async function migratePg(pool: pg.Pool): Promise<{ from: number; to: number }> {
  const client = await pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    try {
      await client.query("CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())");
      const from = await pgSchemaVersion(client);
      if (from > PG_MIGRATIONS.length) {
        throw new StoreError(`the PostgreSQL store has schema version ${from}, newer than this build (${PG_MIGRATIONS.length})`);
      }
      for (let v = from; v < PG_MIGRATIONS.length; v++) {
        await client.query("BEGIN");
        try {
          const step = PG_MIGRATIONS[v]!;
          await (typeof step === "string" ? client.query(step) : step(client));
          await client.query("INSERT INTO schema_migrations (version) VALUES ($1)", [v + 1]);
          await client.query("COMMIT");
        } catch (err) {
          await client.query("ROLLBACK");
          throw err;
        }
      }
      return { from, to: PG_MIGRATIONS.length };
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]);
    }
  } finally {
    client.release();
  }
}

/** Refuses a store whose schema is older or newer than this build, with what to do about it. */
export async function requireCurrentPgSchema(pool: pg.Pool, url: string): Promise<void> {
  let version: number;
  try {
    version = await pgSchemaVersion(pool);
  } catch (err) {
    const message = `cannot read the PostgreSQL store at ${redactUrl(url)}: ${err instanceof Error ? err.message : String(err)}`;
    // Unreachable (or no host in the wanted role: a failover) is the store's state, not a setup mistake: callers retry it.
    throw unavailable(err) ? new StoreUnavailableError(message, { cause: err }) : new StoreError(message);
  }
  if (version === PG_MIGRATIONS.length) return;
  if (version < PG_MIGRATIONS.length) {
    throw new StoreError(
      `the PostgreSQL store at ${redactUrl(url)} has schema version ${version}, this build needs ${PG_MIGRATIONS.length}; run "marketdata migrate --db URL" against the primary`,
    );
  }
  throw new StoreError(
    `the PostgreSQL store at ${redactUrl(url)} has schema version ${version}, newer than this build (${PG_MIGRATIONS.length}); upgrade this server`,
  );
}
