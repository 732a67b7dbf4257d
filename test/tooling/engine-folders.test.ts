import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The two engine folders mirror each other (as kysely's dialect folders do):
// a role both engines fill has the same file name in sqlite/ and postgres/,
// so that reading one engine's file for a role finds the other's. A file
// only one engine has is named here with the reason; a new one fails this
// test until it is mirrored or named.

const STORE = fileURLToPath(new URL("../../src/store/", import.meta.url));

const ENGINE_ONLY: Record<"sqlite" | "postgres", Record<string, string>> = {
  sqlite: {
    "asset-key.ts": "asset ids as sortable text (PostgreSQL orders numeric ids itself)",
    "db.ts": "the connection type, apart from database.ts for the modules it uses",
    "group-commit.ts": "the one writer's batches sharing a commit, in its worker thread",
    "ingest-worker.ts": "that worker thread (SQLite writes block: off the event loop)",
    "market-triggers.ts": "the triggers a bulk import drops and puts back (PostgreSQL keeps the market set-based in its merges)",
    "one-writer.ts": "one writing process per file, elected among serve's and consume's processes",
    "wei.ts": "exact wei sums in 64-bit integers (PostgreSQL has numeric)",
  },
  postgres: {
    "copy.ts": "COPY into staging tables",
    "hosts.ts": "multi-host connection strings and the primary's election (node-postgres has none)",
    "listing-history.ts": "the listings' history, set-based (SQLite keeps it with triggers in migrations.ts)",
    "transaction.ts": "a transaction on one pooled connection (better-sqlite3's are synchronous)",
  },
};

const filesOf = (engine: string) => readdirSync(`${STORE}${engine}`).filter((f) => f.endsWith(".ts")).sort();

describe("the engine folders", () => {
  it("hold the same file names for the same roles, beyond the files one engine alone needs", () => {
    const sqlite = filesOf("sqlite");
    const postgres = filesOf("postgres");
    expect(sqlite.filter((f) => !postgres.includes(f))).toEqual(Object.keys(ENGINE_ONLY.sqlite).sort());
    expect(postgres.filter((f) => !sqlite.includes(f))).toEqual(Object.keys(ENGINE_ONLY.postgres).sort());
    // Most of each folder is shared by name.
    expect(sqlite.filter((f) => postgres.includes(f)).length).toBeGreaterThanOrEqual(30);
  });
});
