import { execFileSync } from "node:child_process";
import { appendFileSync, chmodSync, chownSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import pg from "pg";

// A PostgreSQL hot standby of a running primary, made the way an operator
// makes one: `pg_basebackup -R` (a base backup that writes the standby's
// primary_conninfo and standby.signal), then the server started on the copy
// with `pg_ctl`, streaming the primary's WAL from then on. Used by the
// replicated-deployment script and its CI test; PostgreSQL's own tools do
// all the work, this only runs them in order.
//
// The primary must accept replication connections from 127.0.0.1: Debian's
// pg_hba.conf has no such line by default, so `allowReplication` appends one
// (trust, loopback only, like the cluster's other lines here) and reloads.

export interface Standby {
  /** postgres:// URL of the standby's `database`. */
  url(database: string): string;
  port: number;
  dir: string;
  /** Stops the standby (fast) and removes its data directory. */
  destroy(): Promise<void>;
}

const RUN_AS = "postgres";

/** The PostgreSQL binaries of the server at `pool` (Debian keeps them per major version). */
async function binDir(admin: pg.Client): Promise<string> {
  const { rows } = await admin.query<{ v: string }>("SELECT current_setting('server_version_num') AS v");
  const major = Math.floor(Number(rows[0]!.v) / 10000);
  const dir = `/usr/lib/postgresql/${major}/bin`;
  try {
    statSync(join(dir, "pg_ctl"));
    return dir;
  } catch {
    throw new Error(`pg_ctl for PostgreSQL ${major} not found in ${dir}`);
  }
}

/** Runs a PostgreSQL tool as the server's own user (root may not run the server). */
function asPostgres(cmd: string, args: string[], timeoutMs = 120_000): string {
  const isRoot = process.getuid?.() === 0;
  const [file, argv] = isRoot ? ["runuser", ["-u", RUN_AS, "--", cmd, ...args]] : [cmd, args];
  try {
    return execFileSync(file, argv, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: timeoutMs });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${cmd} failed: ${(e.stderr || e.message).trim()}`);
  }
}

/**
 * Makes sure the primary at `adminUrl` accepts replication connections from
 * 127.0.0.1 (appends a trust line to its pg_hba.conf and reloads if not).
 * Returns whether it changed anything.
 */
export async function allowReplication(adminUrl: string): Promise<boolean> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const rules = await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_hba_file_rules
        WHERE 'replication' = ANY(database) AND error IS NULL AND (address IS NULL OR address = '127.0.0.1')`,
    );
    if (rules.rows[0]!.n > 0) return false;
    const { rows } = await admin.query<{ hba: string }>("SELECT current_setting('hba_file') AS hba");
    const hba = rows[0]!.hba;
    const text = readFileSync(hba, "utf8");
    appendFileSync(hba, `${text.endsWith("\n") ? "" : "\n"}# added by marketdata's standby script: streaming replicas on loopback\nhost replication all 127.0.0.1/32 trust\n`);
    await admin.query("SELECT pg_reload_conf()");
    return true;
  } finally {
    await admin.end();
  }
}

/**
 * Creates a hot standby of the primary at `adminUrl` in `dir`, listening on
 * 127.0.0.1:`port`, and waits until it accepts read-only connections.
 */
export async function createStandby(adminUrl: string, port: number, dir: string): Promise<Standby> {
  const primary = new URL(adminUrl);
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  let bin: string;
  try {
    bin = await binDir(admin);
  } finally {
    await admin.end();
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (process.getuid?.() === 0) {
    // The server's user must reach the directory through its parent (a private temporary folder, say).
    const parent = dirname(dir);
    chmodSync(parent, statSync(parent).mode | 0o711);
    const uid = Number(execFileSync("id", ["-u", RUN_AS], { encoding: "utf8" }));
    const gid = Number(execFileSync("id", ["-g", RUN_AS], { encoding: "utf8" }));
    chownSync(dir, uid, gid);
  }
  asPostgres(join(bin, "pg_basebackup"), [
    "-h", primary.hostname, "-p", primary.port || "5432", "-U", decodeURIComponent(primary.username || RUN_AS),
    "-D", dir, "-R", "-X", "stream", "-c", "fast",
  ]);
  // Debian keeps a cluster's configuration outside its data directory, so the
  // copy has none: the standby's own, small one (port, socket, access).
  writeFileSync(join(dir, "postgresql.conf"), [
    `port = ${port}`,
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${dir}'`,
    "hot_standby = on",
    `hba_file = '${join(dir, "pg_hba.conf")}'`,
    `ident_file = '${join(dir, "pg_ident.conf")}'`,
    "",
  ].join("\n"));
  writeFileSync(join(dir, "pg_hba.conf"), "local all all trust\nhost all all 127.0.0.1/32 trust\n");
  writeFileSync(join(dir, "pg_ident.conf"), "");
  if (process.getuid?.() === 0) {
    const uid = statSync(dir).uid;
    const gid = statSync(dir).gid;
    for (const f of ["postgresql.conf", "pg_hba.conf", "pg_ident.conf"]) chownSync(join(dir, f), uid, gid);
  }
  try {
    asPostgres(join(bin, "pg_ctl"), ["-D", dir, "-l", join(dir, "server.log"), "-w", "-t", "60", "start"]);
  } catch (err) {
    // pg_ctl says only "examine the log": the log's end says why (a port taken, a setting the primary has higher).
    let log = "";
    try {
      log = readFileSync(join(dir, "server.log"), "utf8").trim().split("\n").slice(-10).join("\n");
    } catch {
      // no log written
    }
    throw new Error(`${(err as Error).message}${log === "" ? "" : `\nthe standby's log ends:\n${log}`}`);
  }
  const url = (database: string) => {
    const u = new URL(adminUrl);
    u.port = String(port);
    u.pathname = `/${database}`;
    return u.toString();
  };
  return {
    url,
    port,
    dir,
    destroy: async () => {
      try {
        asPostgres(join(bin, "pg_ctl"), ["-D", dir, "-m", "fast", "-w", "stop"]);
      } catch {
        // Already stopped: nothing to do but remove the copy.
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Waits until the standby has replayed everything the primary had written
 * when called; returns the milliseconds it took.
 */
export async function waitForReplay(primaryUrl: string, standbyUrl: string, timeoutMs = 30_000): Promise<number> {
  const started = Date.now();
  const p = new pg.Client({ connectionString: primaryUrl });
  const s = new pg.Client({ connectionString: standbyUrl });
  await p.connect();
  await s.connect();
  try {
    const { rows } = await p.query<{ lsn: string }>("SELECT pg_current_wal_lsn()::text AS lsn");
    const target = rows[0]!.lsn;
    for (;;) {
      const r = await s.query<{ done: boolean }>("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done", [target]);
      if (r.rows[0]!.done) return Date.now() - started;
      if (Date.now() - started > timeoutMs) throw new Error(`the standby did not replay ${target} within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await p.end();
    await s.end();
  }
}
