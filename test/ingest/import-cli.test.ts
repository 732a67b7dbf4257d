import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openReadOnly } from "../../src/store/sqlite/database.js";
import { BIN, killImportMidway, runCli } from "../cli/run-cli.js";
import { dumpStore, rowCounts } from "../support/dump.js";
import { VALID, withField } from "./records.js";

const dir = mkdtempSync(join(tmpdir(), "marketdata-import-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sale = (i: number) =>
  JSON.stringify({
    ...VALID.sales,
    hash: `0x${i.toString(16).padStart(64, "0")}`,
    assetId: String(i % 500),
    timestamp: 1_700_000_000 + i,
    block: 18_000_000 + i,
  });

function writeLines(name: string, lines: string[]): string {
  const path = join(dir, name);
  writeFileSync(path, `${lines.join("\n")}\n`);
  return path;
}

describe("marketdata import", () => {
  it("reports each bad line as FILE:LINE: field: reason and writes nothing", () => {
    const db = join(dir, "atomic.sqlite");
    const file = writeLines("mixed.ndjson", [
      sale(1),
      sale(2),
      JSON.stringify(withField(VALID.sales!, "price", "12.5")),
      sale(3),
      JSON.stringify({ ...JSON.parse(sale(4)), timestamp: 1_700_000_000_123 }),
    ]);
    const r = runCli(["import", "--db", db, "sales", file]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${file}:3: price: must be a canonical unsigned decimal string`);
    expect(r.stderr).toContain(`${file}:5: timestamp: must be epoch seconds below 100000000000, got 1700000000123 (milliseconds?)`);
    expect(r.stderr).toMatch(/2 of 5 lines invalid; nothing was written \(use --skip-invalid/);
    expect(rowCounts(db).sales).toBe(0);
  });

  it("--skip-invalid writes the valid lines and the rejected ones, with reasons, to FILE.rejects.ndjson", () => {
    const db = join(dir, "skip.sqlite");
    const bad = JSON.stringify(withField(VALID.sales!, "marketplace", "blur"));
    const file = writeLines("skip.ndjson", [sale(1), bad, sale(2), "not json"]);
    const r = runCli(["import", "--db", db, "--skip-invalid", "sales", file]);
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(/4 rows read, 2 inserted, 0 updated, 0 unchanged, 2 rejected/);
    expect(rowCounts(db).sales).toBe(2);
    const rejects = readFileSync(`${file}.rejects.ndjson`, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(rejects).toEqual([
      { line: 2, errors: [expect.stringMatching(/^marketplace: must be an upper-case identifier/)], input: bad },
      { line: 4, errors: [expect.stringMatching(/^record: is not valid JSON/)], input: "not json" },
    ]);
  });

  it("re-importing updates in place; the same file twice changes nothing", () => {
    const db = join(dir, "idempotent.sqlite");
    const file = writeLines("twice.ndjson", [sale(1), sale(2), sale(3)]);
    expect(runCli(["import", "--db", db, "sales", file]).stderr).toMatch(/3 inserted, 0 updated, 0 unchanged/);
    const before = dumpStore(db);
    expect(runCli(["import", "--db", db, "sales", file]).stderr).toMatch(/0 inserted, 0 updated, 3 unchanged/);
    expect(dumpStore(db)).toEqual(before);
    const changed = writeLines("changed.ndjson", [JSON.stringify({ ...JSON.parse(sale(2)), marketplace: "BLUR" })]);
    expect(runCli(["import", "--db", db, "sales", changed]).stderr).toMatch(/0 inserted, 1 updated, 0 unchanged/);
    expect(rowCounts(db).sales).toBe(3);
  });

  it("reads stdin for FILE -", () => {
    const db = join(dir, "stdin.sqlite");
    const r = runCli(["import", "--db", db, "collections", "-"], `${JSON.stringify(VALID.collections)}\n`);
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(/imported collections from stdin: 1 rows read, 1 inserted/);
    const bad = runCli(["import", "--db", db, "collections", "-"], `{"contractAddress": "0x1", "name": "x"}\n`);
    expect(bad.stderr).toContain("stdin:1: contractAddress: must be 0x followed by 40 hex characters");
  });

  it("refuses an unknown kind and a missing file clearly", () => {
    const db = join(dir, "usage.sqlite");
    expect(runCli(["import", "--db", db, "trades", "x.ndjson"]).stderr).toMatch(/KIND must be one of collections, tokens, appraisals, rarity, sales, listings, transfers, offers, influencers, tweets, scores, reorgs, finality, prices, spam, flags, got "trades"/);
    expect(runCli(["import", "--db", db, "sales", join(dir, "missing.ndjson")]).stderr).toMatch(/cannot read .*missing\.ndjson: no such file/);
  });

  it("bulk-loads a large file and rebuilds the indexes", () => {
    const db = join(dir, "bulk.sqlite");
    const file = writeLines("bulk.ndjson", Array.from({ length: 30_000 }, (_, i) => sale(i)));
    expect(runCli(["import", "--db", db, "sales", file]).status).toBe(0);
    const conn = openReadOnly(db);
    const indexes = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sales' ORDER BY name").pluck().all();
    expect(indexes).toEqual(["sales_by_asset", "sales_by_block", "sales_by_feed", "sales_by_marketplace", "sales_by_time", "sales_natural_key", "sales_washed"]);
    expect(conn.prepare("PRAGMA integrity_check").pluck().get()).toBe("ok");
    expect(conn.prepare("SELECT count(*) FROM sales").pluck().get()).toBe(30_000);
    conn.close();
  });

  it("an import killed mid-file leaves the prior data intact", async () => {
    const db = join(dir, "kill.sqlite");
    expect(runCli(["import", "--db", db, "sales", writeLines("prior.ndjson", [sale(1), sale(2)])]).status).toBe(0);
    const before = dumpStore(db);
    const big = writeLines("big.ndjson", Array.from({ length: 250_000 }, (_, i) => sale(i + 10)));
    expect(await killImportMidway(db, big)).toBe("SIGKILL");
    expect(dumpStore(db)).toEqual(before);
    const conn = openReadOnly(db);
    expect(conn.prepare("PRAGMA integrity_check").pluck().get()).toBe("ok");
    conn.close();
  }, 90_000);

  it.each([["import"], ["derive"], ["demo"], ["start"]])("%s --help prints usage", (command) => {
    const r = runCli([command, "--help"]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^Usage: marketdata ${command}`));
  });
});

describe.skipIf(!existsSync("/usr/bin/script"))("import on a terminal", () => {
  it("shows a progress bar with rows, rows/s and ETA", () => {
    const db = join(dir, "tty.sqlite");
    const file = writeLines("tty.ndjson", Array.from({ length: 60_000 }, (_, i) => sale(i)));
    // `script` runs the command on a pseudo-terminal, as a person would.
    const r = spawnSync("/usr/bin/script", ["-qec", `${process.execPath} ${BIN} import --db ${db} sales ${file}`, "/dev/null"], {
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/import sales \[[^\]]*\] \d+% \| \d+ rows \| \d+ rows\/s \| ETA /);
    expect(r.stdout).toMatch(/60000 rows read, 60000 inserted/);
  });
});

describe("interrupting an import", () => {
  it("SIGINT while waiting on stdin rolls back what was read", async () => {
    const db = join(dir, "sigint.sqlite");
    const child = spawn(process.execPath, [BIN, "import", "--db", db, "sales", "-"], { stdio: ["pipe", "ignore", "pipe"] });
    let stderr = "";
    child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
    child.stdin!.write(`${sale(1)}\n${sale(2)}\n`);
    // The store exists once the import has started (its signal handlers are set by then).
    const deadline = Date.now() + 30_000;
    while (!existsSync(`${db}-wal`) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 200));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.kill("SIGINT");
    expect(await exited).toBe(1);
    expect(stderr).toMatch(/stdin: interrupted; nothing was written/);
    expect(rowCounts(db).sales).toBe(0);
  });

  it("--skip-invalid leaves no rejects file when nothing was rejected", () => {
    const db = join(dir, "norejects.sqlite");
    const file = writeLines("clean.ndjson", [sale(1)]);
    expect(runCli(["import", "--db", db, "--skip-invalid", "sales", file]).status).toBe(0);
    expect(existsSync(`${file}.rejects.ndjson`)).toBe(false);
  });
});
