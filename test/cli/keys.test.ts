import { existsSync, mkdtempSync, rmSync } from "node:fs";
import Database from "better-sqlite3";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { hashApiKey, newApiKey } from "../../src/store/sqlite/key-admin.js";
import { ApiKeyVerifier } from "../../src/store/sqlite/key-verifier.js";
import { keysFileOf, openKeys, openReadOnly } from "../../src/store/sqlite/database.js";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.js";
import { startTestServer } from "../support/server.js";
import { runCli } from "./run-cli.js";

const dir = mkdtempSync(join(tmpdir(), "marketdata-keys-"));
const db = join(dir, "nested", "keys.sqlite");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function isValid(key: string): boolean {
  const conn = openKeys(db, { readonly: true });
  try {
    return new ApiKeyVerifier(conn).lookup(key) !== undefined;
  } finally {
    conn.close();
  }
}

describe("marketdata keys", () => {
  let key = "";

  it("create prints the new key alone on the last line of stdout, creating the store", () => {
    const r = runCli(["keys", "create", "--db", db, "--name", "dashboard"]);
    expect(r.status).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    key = lines[lines.length - 1]!;
    expect(key).toMatch(/^mdk_[A-Za-z0-9_-]{43}$/);
    expect(isValid(key)).toBe(true);
    const second = runCli(["keys", "create", "--db", db, "--name", "other"]).stdout.trim();
    expect(second).not.toBe(key);
  });

  it("list shows id, name, created and revoked, never a key", () => {
    const r = runCli(["keys", "list", "--db", db]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^ID\s+NAME\s+SCOPE\s+CREATED\s+REVOKED\s+RATE\/S\n1\s+dashboard\s+read\s+\d{4}-\d\d-\d\dT\S+\s+-\s+default\n2\s+other/);
    expect(r.stdout).not.toContain("mdk_");
  });

  it("revoke stops the key and shows when", () => {
    const r = runCli(["keys", "revoke", "--db", db, "1"]);
    expect(r.status).toBe(0);
    expect(isValid(key)).toBe(false);
    expect(runCli(["keys", "list", "--db", db]).stdout).toMatch(/\n1\s+dashboard\s+read\s+\S+\s+\d{4}-\d\d-\d\dT/);
  });

  it("create --rate and update --rate set a key's own rate limit; update --rate default clears it", () => {
    const created = runCli(["keys", "create", "--db", db, "--name", "limited", "--rate", "100"]);
    expect(created.status).toBe(0);
    expect(created.stderr).toMatch(/100 requests\/s/);
    const limited = created.stdout.trim().split("\n").pop()!;
    const grantOf = (k: string) => {
      const conn = openKeys(db, { readonly: true });
      try {
        return new ApiKeyVerifier(conn).lookup(k);
      } finally {
        conn.close();
      }
    };
    expect(grantOf(limited)).toEqual({ id: 3, rateLimit: 100, scope: "read" });
    expect(runCli(["keys", "list", "--db", db]).stdout).toMatch(/\n3\s+limited\s+read\s+\S+\s+-\s+100\n/);
    expect(runCli(["keys", "update", "--db", db, "3", "--rate", "7"]).status).toBe(0);
    expect(grantOf(limited)).toEqual({ id: 3, rateLimit: 7, scope: "read" });
    expect(runCli(["keys", "update", "--db", db, "3", "--rate", "default"]).status).toBe(0);
    expect(grantOf(limited)).toEqual({ id: 3, rateLimit: null, scope: "read" });
  });

  it("create --scope ingest (or admin) makes a key that may write; list shows each key's scope", () => {
    const created = runCli(["keys", "create", "--db", db, "--name", "indexer", "--scope", "ingest"]);
    expect(created.status).toBe(0);
    expect(created.stderr).toMatch(/^Created ingest API key \d+ \(indexer\)/);
    const writer = created.stdout.trim().split("\n").pop()!;
    const conn = openKeys(db, { readonly: true });
    try {
      expect(new ApiKeyVerifier(conn).lookup(writer)).toMatchObject({ scope: "ingest" });
    } finally {
      conn.close();
    }
    expect(runCli(["keys", "list", "--db", db]).stdout).toMatch(/\n\d+\s+indexer\s+ingest\s+\d{4}-/);
  });

  it("a key file made before scopes: read-only servers take every key as a read key; the next writing command adds the column", () => {
    const path = join(dir, "prescope.sqlite");
    runCli(["keys", "list", "--db", path]);
    const keysFile = `${path}-keys`;
    const raw = new Database(keysFile);
    raw.exec("DROP TABLE api_keys; CREATE TABLE api_keys (id INTEGER PRIMARY KEY, name TEXT NOT NULL, key_hash BLOB NOT NULL UNIQUE, created_at INTEGER NOT NULL, revoked_at INTEGER, rate_limit INTEGER)");
    const old = "mdk_old-key-from-before-scopes";
    raw.prepare("INSERT INTO api_keys (name, key_hash, created_at) VALUES ('old', ?, 1700000000)").run(hashApiKey(old));
    raw.close();
    const ro = openKeys(path, { readonly: true });
    try {
      expect(new ApiKeyVerifier(ro).lookup(old)).toEqual({ id: 1, rateLimit: null, scope: "read" });
    } finally {
      ro.close();
    }
    expect(runCli(["keys", "list", "--db", path]).stdout).toMatch(/\n1\s+old\s+read\s+2023-11-14T/);
  });

  it("stores only a hash of each key", () => {
    const conn = openKeys(db, { readonly: true });
    const rows = conn.prepare("SELECT * FROM api_keys").all();
    conn.close();
    expect(JSON.stringify(rows)).not.toContain(key.slice(4));
  });

  it.each([
    [["keys", "revoke", "--db", "DB", "99"], /no API key with id 99/],
    [["keys", "revoke", "--db", "DB", "abc"], /ID must be a positive integer, got "abc"/],
    [["keys", "create", "--db", "DB"], /required option '--name <name>' not specified/],
    [["keys", "create", "--db", "DB", "--name", " "], /--name must not be empty/],
    [["keys", "create", "--db", "DB", "--name", "x", "--rate", "0"], /--rate must be a whole number of requests per second from 1, or "default", got "0"/],
    [["keys", "update", "--db", "DB", "2", "--rate", "fast"], /--rate must be a whole number/],
    [["keys", "update", "--db", "DB", "99", "--rate", "5"], /no API key with id 99/],
    [["keys", "update", "--db", "DB", "2"], /nothing to update: give --rate N or --rate default/],
    [["keys", "create", "--db", "DB", "--name", "x", "--scope", "write"], /argument 'write' is invalid. Allowed choices are read, ingest, admin/],
  ])("refuses %j clearly", (args, message) => {
    const r = runCli(args.map((a) => (a === "DB" ? db : a)));
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/at .*\.ts:\d+/);
  });

  it.each([[["--help"]], [["keys", "--help"]], [["keys", "create", "--help"]], [["keys", "list", "--help"]], [["keys", "revoke", "--help"]], [["keys", "update", "--help"]], [["serve", "--help"]]])(
    "%j prints usage",
    (args) => {
      const r = runCli(args);
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^Usage: marketdata/);
    },
  );
});

describe("a store whose keys were kept inside it (schema 3)", () => {
  it("moves them to the key file on the first writing command, and servers accept them", async () => {
    const path = join(dir, "old.sqlite");
    const old = new Database(path);
    old.pragma("journal_mode = WAL");
    for (const step of MIGRATIONS.slice(0, 3)) {
      if (typeof step === "string") old.exec(step);
      else step(old, { openKeys: () => { throw new Error("not at schema 3"); } });
    }
    old.pragma("user_version = 3");
    const key = newApiKey();
    old.prepare("INSERT INTO api_keys (name, key_hash, created_at, revoked_at, rate_limit) VALUES ('legacy', ?, 1700000000, NULL, 9)").run(hashApiKey(key));
    old.close();
    expect(existsSync(keysFileOf(path))).toBe(false);

    const r = runCli(["keys", "list", "--db", path]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/\n1\s+legacy\s+read\s+2023-11-14T\S+\s+-\s+9\n/);
    expect(existsSync(keysFileOf(path))).toBe(true);
    const conn = openReadOnly(path);
    expect(conn.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'api_keys'").pluck().get()).toBe(0);
    conn.close();
    const server = await startTestServer(path);
    try {
      const ask = (k: string) => fetch(`${server.url}/v1/collection/scores?contractAddress=0x${"a".repeat(40)}`, { headers: { "x-api-key": k } });
      // An empty store: the key is accepted and the collection is not found; a made-up key is refused.
      expect((await ask(key)).status).toBe(404);
      expect((await ask(newApiKey())).status).toBe(401);
    } finally {
      await server.close();
    }
  });
});
