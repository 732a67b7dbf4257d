import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { openReadOnly, openWritable } from "../../src/store/sqlite/database.js";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.js";
import { sqliteRepositories } from "../../src/store/sqlite/read-repositories.js";
import { dumpStore } from "../support/dump.js";
import { VALID } from "../ingest/records.js";
import { killImportMidway, runCli } from "./run-cli.js";

const dir = mkdtempSync(join(tmpdir(), "marketdata-stats-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const C = (VALID.sales!.contractAddress as string).toLowerCase();
const MARKETPLACES = ["OPENSEA", "BLUR", "X2Y2"];
const sale = (i: number) =>
  JSON.stringify({
    ...VALID.sales,
    hash: `0x${i.toString(16).padStart(64, "0")}`,
    assetId: String(i % 500),
    timestamp: 1_700_000_000 + i * 7,
    block: 18_000_000 + i,
    marketplace: MARKETPLACES[i % 3],
    price: String(10n ** 18n * BigInt(1 + (i % 13))),
    amountReceived: "0",
  });

function writeLines(name: string, lines: string[]): string {
  const path = join(dir, name);
  writeFileSync(path, `${lines.join("\n")}\n`);
  return path;
}

/** The whole-history stats the server would answer, and the same sums by GROUP BY over the raw rows. */
function statsAndOracle(path: string) {
  const db = openReadOnly(path);
  try {
    const store = sqliteRepositories(db);
    const got = store.sales.salesSummary(store.collections.collectionId(C)!, {});
    const raw = db
      .prepare("SELECT marketplace, count(*) AS n, group_concat(price) AS prices FROM sales GROUP BY marketplace")
      .all() as { marketplace: string; n: number; prices: string }[];
    const want = Object.fromEntries(
      raw.map((r) => [r.marketplace, [r.n, r.prices.split(",").reduce((s, p) => s + BigInt(p), 0n).toString()]]),
    );
    return { got: Object.fromEntries(got.groups.map((g) => [g.marketplace, [g.totalNumSales, g.totalVolume]])), want };
  } finally {
    db.close();
  }
}

describe("marketdata stats rebuild", () => {
  it("finds nothing to fix after imports, and repairs aggregates a manual edit broke", () => {
    const db = join(dir, "repair.sqlite");
    expect(runCli(["import", "--db", db, "sales", writeLines("a.ndjson", Array.from({ length: 3000 }, (_, i) => sale(i)))]).status).toBe(0);
    const check = runCli(["stats", "rebuild", "--db", db, "--check"]);
    expect(check.stderr).toMatch(/consistent with the sales/);
    expect(check.status).toBe(0);

    // An operator repairs the sales table by hand: the aggregates cannot know.
    const w = new Database(db);
    w.exec("DELETE FROM sales WHERE marketplace = 'BLUR' AND timestamp < 1700005000");
    w.close();
    const stale = statsAndOracle(db);
    expect(stale.got).not.toEqual(stale.want);

    const found = runCli(["stats", "rebuild", "--db", db, "--check"]);
    expect(found.status).toBe(1);
    expect(found.stderr).toMatch(/[1-9]\d* aggregate row\(s\) \(hours, series\) differ from the sales; run "marketdata stats rebuild"/);
    const fixed = runCli(["stats", "rebuild", "--db", db]);
    expect(fixed.status).toBe(0);
    expect(fixed.stderr).toMatch(/rebuilt stats of every collection from the sales in \d+ ms: [1-9]\d* aggregate row\(s\) \(hours, series\) fixed/);
    const after = statsAndOracle(db);
    expect(after.got).toEqual(after.want);
    expect(runCli(["stats", "rebuild", "--db", db, "--collection", C, "--check"]).status).toBe(0);

    // A damaged row of every marketplace's running totals (stats_hours) is found and fixed the same way.
    const d = new Database(db);
    d.exec("UPDATE stats_hours SET running = '[]' WHERE hour = (SELECT max(hour) FROM stats_hours)");
    d.close();
    const damaged = statsAndOracle(db);
    expect(damaged.got).not.toEqual(damaged.want);
    expect(runCli(["stats", "rebuild", "--db", db, "--check"]).status).toBe(1);
    expect(runCli(["stats", "rebuild", "--db", db]).status).toBe(0);
    const repaired = statsAndOracle(db);
    expect(repaired.got).toEqual(repaired.want);
  });

  // 90 s: its imports took 25-30 s alone on the 2-core machine on 11-30, at the build before this one too (the default 30 s timed out under CI's load).
  it("an import killed mid-file leaves rows and aggregates as they were, consistent", async () => {
    const db = join(dir, "kill.sqlite");
    expect(runCli(["import", "--db", db, "sales", writeLines("prior.ndjson", [sale(1), sale(2), sale(3)])]).status).toBe(0);
    const before = dumpStore(db);
    // Later sales and updates of the prior ones: the aggregates of both would change.
    const big = writeLines("big.ndjson", [sale(1).replace('"BLUR"', '"X2Y2"'), ...Array.from({ length: 250_000 }, (_, i) => sale(i + 10))]);
    expect(await killImportMidway(db, big)).toBe("SIGKILL");
    expect(dumpStore(db)).toEqual(before);
    expect(before.sales_hourly!.length).toBeGreaterThan(0);
    expect(runCli(["stats", "rebuild", "--db", db, "--check"]).status).toBe(0);
  }, 90_000);

  it("builds the aggregates of a store written before they existed, on its first writable open", () => {
    const path = join(dir, "v1.sqlite");
    const old = new Database(path);
    old.exec(MIGRATIONS[0] as string);
    old.pragma("user_version = 1");
    old.prepare("INSERT INTO collections (id, address) VALUES (1, ?)").run(C);
    const insert = old.prepare(
      `INSERT INTO sales (collection_id, asset_key, hash, seller, buyer, timestamp, block, price, amount_received, price_hi, price_lo, marketplace)
       VALUES (1, '011', ?, x'01', x'02', ?, 1, ?, '0', NULL, NULL, ?)`,
    );
    for (let i = 0; i < 500; i++) insert.run(Buffer.from([i >> 8, i & 255]), 1_700_000_000 + i * 600, String(2n ** 96n + BigInt(i)), MARKETPLACES[i % 3]);
    old.close();
    openWritable(path).close();
    const { got, want } = statsAndOracle(path);
    expect(got).toEqual(want);
    expect(runCli(["stats", "rebuild", "--db", path, "--check"]).status).toBe(0);
  });

  it("refuses a bad or unknown --collection clearly, and has --help", () => {
    const db = join(dir, "repair.sqlite");
    const bad = runCli(["stats", "rebuild", "--db", db, "--collection", "0x12"]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/--collection must be 0x followed by 40 hex characters/);
    const unknown = runCli(["stats", "rebuild", "--db", db, "--collection", `0x${"9".repeat(40)}`]);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toMatch(/not found/);
    const help = runCli(["stats", "rebuild", "--help"]);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: marketdata stats rebuild/);
    expect(runCli(["stats", "--help"]).stdout).toMatch(/rebuild/);
  });
});
