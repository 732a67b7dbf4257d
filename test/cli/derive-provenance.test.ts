import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openReadOnly } from "../../src/store/sqlite/database.js";
import { C, VALID } from "../ingest/records.js";
import { runCli } from "./run-cli.js";

// Imported appraisals and rarity are an operator's data: derive never
// overwrites or deletes them, says what it kept, and replaces them only when
// told to (--replace-imported).

const dir = mkdtempSync(join(tmpdir(), "derive-provenance-"));
const db = join(dir, "store.sqlite");
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const collection = C.toLowerCase();

function importRecords(kind: string, records: Record<string, unknown>[]): void {
  const file = join(dir, `${kind}-${Math.random().toString(36).slice(2)}.ndjson`);
  writeFileSync(file, records.map((r) => JSON.stringify(r)).join("\n") + "\n");
  const r = runCli(["import", "--db", db, kind, file]);
  expect(r.status, r.stderr).toBe(0);
}

type Row = { asset: string; value: string; source: string };
function appraisals(): Row[] {
  const conn = openReadOnly(db);
  try {
    return conn
      .prepare("SELECT asset_key AS asset, fair_market_value AS value, source FROM appraisals ORDER BY asset_key")
      .all() as Row[];
  } finally {
    conn.close();
  }
}
function rarity(): { asset: string; rank: number; source: string }[] {
  const conn = openReadOnly(db);
  try {
    return conn.prepare("SELECT asset_key AS asset, rarity_rank AS rank, source FROM rarity ORDER BY asset_key").all() as never;
  } finally {
    conn.close();
  }
}

const token = (assetId: string, fur: string) => ({ ...VALID.tokens, assetId, attributes: [{ trait_type: "Fur", value: fur }] });
const sale = (assetId: string, i: number, price: string) => ({
  ...VALID.sales,
  assetId,
  hash: `0x${i.toString(16).padStart(64, "0")}`,
  timestamp: 1_700_000_000 + i * 3600,
  price,
  amountReceived: price,
});
const OPERATOR_VALUE = "777000000000000000000";

describe("derive and imported data", () => {
  it("keeps imported appraisals (with or without token or sale) and imported rarity, and says so", () => {
    importRecords("tokens", [token("1", "Gold"), token("2", "Blue"), token("3", "Blue"), token("4", "Red")]);
    importRecords("sales", [sale("1", 1, "1000000000000000000"), sale("2", 2, "2000000000000000000"), sale("3", 3, "1500000000000000000")]);
    // The operator's own model: asset 2 (has sales and a token) and asset 99 (neither).
    importRecords("appraisals", [
      { ...VALID.appraisals, assetId: "2", fairMarketValue: OPERATOR_VALUE },
      { ...VALID.appraisals, assetId: "99", fairMarketValue: OPERATOR_VALUE },
    ]);
    importRecords("rarity", [{ ...VALID.rarity, assetId: "4", rarityRank: 1234 }]);

    const r = runCli(["derive", "--db", db]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/appraisals: kept 2 imported rows \(1 of them instead of a computed value\); derive --replace-imported overwrites them/);
    expect(r.stderr).toMatch(/rarity: kept 1 imported rows \(1 of them instead of a computed value\)/);

    const rows = appraisals();
    expect(rows.find((x) => x.asset === "012")).toEqual({ asset: "012", value: OPERATOR_VALUE, source: "imported" });
    expect(rows.find((x) => x.asset === "0299")).toEqual({ asset: "0299", value: OPERATOR_VALUE, source: "imported" });
    expect(rows.filter((x) => x.source === "derived").map((x) => x.asset)).toEqual(["011", "013", "014"]);
    expect(rarity().find((x) => x.asset === "014")).toEqual({ asset: "014", rank: 1234, source: "imported" });
    expect(rarity().filter((x) => x.source === "derived")).toHaveLength(3);
  });

  it("a second derive changes nothing imported, and replaces only its own rows", () => {
    const before = appraisals();
    expect(runCli(["derive", "--db", db]).status).toBe(0);
    expect(appraisals()).toEqual(before);
  });

  it("an import over a derived row makes it the operator's", () => {
    importRecords("appraisals", [{ ...VALID.appraisals, assetId: "3", fairMarketValue: OPERATOR_VALUE }]);
    expect(runCli(["derive", "--db", db]).status).toBe(0);
    expect(appraisals().find((x) => x.asset === "013")).toEqual({ asset: "013", value: OPERATOR_VALUE, source: "imported" });
  });

  it("--replace-imported overwrites imported rows that have a computed value, and still deletes none", () => {
    const r = runCli(["derive", "--db", db, "--collection", collection, "--replace-imported"]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/appraisals: replaced 2 imported rows with computed ones \(--replace-imported\); 1 imported rows without a computed value kept/);
    const rows = appraisals();
    expect(rows.find((x) => x.asset === "012")?.source).toBe("derived");
    expect(rows.find((x) => x.asset === "012")?.value).not.toBe(OPERATOR_VALUE);
    expect(rows.find((x) => x.asset === "0299")).toEqual({ asset: "0299", value: OPERATOR_VALUE, source: "imported" });
    expect(rarity().every((x) => x.source === "derived")).toBe(true);
  });

  it("--help documents the flag", () => {
    const r = runCli(["derive", "--help"]);
    expect(r.stdout).toMatch(/--replace-imported/);
  });
});
