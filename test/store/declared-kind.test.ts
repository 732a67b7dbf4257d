import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { declareKind, notAhead } from "../../src/domain/kinds/declaration.js";
import * as f from "../../src/domain/kinds/fields.js";
import { type Kind, registerKind } from "../../src/domain/kinds/index.js";
import { importLines, type LineError } from "../../src/ingest/importer.js";
import { Ingest } from "../../src/service/ingest-service.js";
import { WriteNotices, type WriteNotice } from "../../src/service/write-notices.js";
import { openWritableStore } from "../../src/store/open.js";
import type { IngestWriter } from "../../src/store/ports/writes.js";
import { col } from "../../src/store/postgres/record-writes.js";
import { registerPgKind, tableWrites as pgTableWrites } from "../../src/store/postgres/kind-writes.js";
import { pgIngestWriter } from "../../src/store/postgres/ingest-writer.js";
import { assetKey } from "../../src/store/sqlite/asset-key.js";
import { GroupCommitWriter } from "../../src/store/sqlite/group-commit.js";
import { hexToBytes } from "../../src/store/sqlite/hex.js";
import { registerSqliteKind, tableWrites as sqliteTableWrites } from "../../src/store/sqlite/kind-writes.js";
import { emptyStore, type Engine } from "../support/engine.js";
import { skipPg } from "../support/pg.js";

// A record kind needs its declaration, one migration per engine and its
// engines' statements, nothing more (docs/architecture.md, "A record
// kind"): "mints" is added here, in this file alone, and taken by the
// import and by the ingest API's path on the test engine, checked by its
// declaration's shape and rules, written by natural key, counted as
// inserted, updated and unchanged, and announced to the write notices.
// On both engines, in this file (PostgreSQL skipped, visibly, without one).

const CONTRACT = "0x1111111111111111111111111111111111111111";
const MINTER = "0x2222222222222222222222222222222222222222";
const HASH = `0x${"ab".repeat(32)}`;
const NOW = Math.floor(Date.now() / 1000);

// 1. The declaration.
const shape = f.object({
  contractAddress: f.address,
  assetId: f.uint256,
  minter: f.address,
  hash: f.txHash,
  timestamp: f.epochSeconds,
  block: f.count,
});
const mints = declareKind({
  name: "mints",
  shape,
  rules: (r, problems, ctx) => notAhead("timestamp", r.timestamp, ctx, problems),
  fromMessage: (m: { contract: string; id: string; by: string; tx: string; at: bigint; block: bigint }) => ({
    contractAddress: m.contract,
    assetId: m.id,
    minter: m.by,
    hash: m.tx,
    timestamp: Number(m.at),
    block: Number(m.block),
  }),
  naturalKey: ["contractAddress", "assetId"],
  moves: [],
});

// 2. One migration per engine.
const SQLITE_MIGRATION = `CREATE TABLE mints (
  collection_id INTEGER NOT NULL REFERENCES collections(id), asset_key TEXT NOT NULL,
  minter TEXT NOT NULL, hash BLOB NOT NULL, timestamp INTEGER NOT NULL, block INTEGER NOT NULL);
CREATE UNIQUE INDEX mints_natural_key ON mints (collection_id, asset_key);`;
const PG_MIGRATION = `CREATE TABLE mints (
  collection_id integer NOT NULL REFERENCES collections(id), asset_id numeric NOT NULL,
  minter text NOT NULL, hash bytea NOT NULL, timestamp bigint NOT NULL, block bigint NOT NULL,
  UNIQUE (collection_id, asset_id))`;

// 3. Its statements on each engine.
const SQLITE_WRITES = sqliteTableWrites(
  { table: "mints", key: ["collection_id", "asset_key"], values: ["minter", "hash", "timestamp", "block"] },
  (r, store) => ({
    collection_id: store.collectionOf(r as { contractAddress: string }),
    asset_key: assetKey(String(r.assetId)),
    minter: r.minter,
    hash: hexToBytes(String(r.hash)),
    timestamp: r.timestamp,
    block: r.block,
  }),
);
const PG_WRITES = pgTableWrites({
  table: "mints",
  stage: [col("asset_id", "numeric"), col("minter"), col("hash"), col("timestamp", "bigint"), col("block", "bigint")],
  row: (r) => [r.assetId, r.minter, r.hash, r.timestamp, r.block],
  key: ["collection_id", "asset_id"],
  values: ["minter", "hash", "timestamp", "block"],
  select: "c.id AS collection_id, st.asset_id, st.minter, decode(substr(st.hash, 3), 'hex') AS hash, st.timestamp, st.block",
});

const KIND = "mints" as Kind;
const mint = (assetId: string, block = 100, timestamp = NOW - 60) => ({ contractAddress: CONTRACT, assetId, minter: MINTER, hash: HASH, timestamp, block });
const lines = async function* (records: readonly unknown[]) {
  for (const r of records) yield typeof r === "string" ? r : JSON.stringify(r);
};

describe.each([
  { engine: "sqlite" as Engine, skip: false },
  { engine: "postgres" as Engine, skip: skipPg },
])("a kind added by its declaration, migrations and statements alone ($engine)", ({ engine, skip }) => {
  if (skip) {
    it.skip("needs PostgreSQL (set MARKETDATA_TEST_PG, or start it at 127.0.0.1:5432)", () => {});
    return;
  }
  const ENGINE = engine;
  /** An asset id as the engine's table holds it (SQLite: sortable text). */
  const stored = (assetId: string) => (ENGINE === "sqlite" ? assetKey(assetId) : assetId);
  let store: { target: string; cleanup(): Promise<void> };
  const unregister: (() => void)[] = [];

  beforeAll(async () => {
    unregister.push(registerKind(mints), registerSqliteKind("mints", SQLITE_WRITES), registerPgKind("mints", PG_WRITES));
    store = await emptyStore(engine);
    const opened = await openWritableStore(store.target, { migrateEmpty: true });
    await opened.close();
    if (ENGINE === "sqlite") {
      const db = new Database(store.target);
      db.exec(SQLITE_MIGRATION);
      db.close();
    } else {
      const client = new pg.Client(store.target);
      await client.connect();
      await client.query(PG_MIGRATION);
      await client.end();
    }
  });
  afterAll(async () => {
    for (const u of unregister) u();
    await store?.cleanup();
  });

  const rows = async (): Promise<{ asset: string; block: number }[]> => {
    if (ENGINE === "sqlite") {
      const db = new Database(store.target, { readonly: true });
      try {
        return db.prepare("SELECT CAST(asset_key AS TEXT) AS asset, block FROM mints ORDER BY block, asset").all() as { asset: string; block: number }[];
      } finally {
        db.close();
      }
    }
    const client = new pg.Client(store.target);
    await client.connect();
    try {
      return (await client.query("SELECT asset_id::text AS asset, block::int AS block FROM mints ORDER BY block, asset")).rows;
    } finally {
      await client.end();
    }
  };

  it("is imported: checked by its declaration, written by its natural key", async () => {
    const w = await openWritableStore(store.target);
    const rejected: LineError[] = [];
    try {
      const stats = await importLines(w.records, lines([mint("1"), mint("2"), { ...mint("3"), minter: "nobody" }, mint("4", 100, NOW + 30 * 86_400)]), {
        kind: KIND,
        skipInvalid: true,
        onReject: (e) => rejected.push(e),
      });
      expect(stats).toMatchObject({ lines: 4, inserted: 2, updated: 0, unchanged: 0, rejected: 2 });
      expect(rejected.map((e) => [e.line, e.problems[0]!.field])).toEqual([[3, "minter"], [4, "timestamp"]]);
      // The same key again: the later record replaces the earlier; an identical one changes nothing.
      const again = await importLines(w.records, lines([mint("1", 101), mint("2")]), { kind: KIND, skipInvalid: false });
      expect(again).toMatchObject({ inserted: 0, updated: 1, unchanged: 1 });
    } finally {
      await w.close();
    }
    expect((await rows()).map((r) => [r.asset, r.block])).toEqual([[stored("2"), 100], [stored("1"), 101]]);
  });

  it("is taken by the ingest API's path: its RPC records made import lines by the declaration, the write announced", async () => {
    const writer: IngestWriter = ENGINE === "sqlite" ? new GroupCommitWriter(store.target) : pgIngestWriter(store.target);
    const notices = new WriteNotices();
    const heard: WriteNotice[] = [];
    notices.subscribe((n) => heard.push(n));
    const ingest = new Ingest(writer, { notices, now: () => NOW * 1000 });
    try {
      const message = { contract: CONTRACT, id: "5", by: MINTER, tx: HASH, at: BigInt(NOW - 10), block: 102n };
      expect(await ingest.records(KIND, [message, { ...message, id: "6" }], false)).toEqual({ accepted: 2, duplicates: 0, rejected: [] });
      expect(await ingest.records(KIND, [message], false)).toEqual({ accepted: 0, duplicates: 1, rejected: [] });
      // A bad record is refused by the declaration's checks, and the batch with it.
      await expect(ingest.records(KIND, [{ ...message, id: "x7" }], false)).rejects.toThrow(/record 1: assetId/);
      expect(heard).toEqual([{ kind: "mints", collections: new Set([CONTRACT]) }]);
    } finally {
      await writer.close();
    }
    expect((await rows()).filter((r) => r.block === 102).map((r) => r.asset)).toEqual([stored("5"), stored("6")]);
  });
});
