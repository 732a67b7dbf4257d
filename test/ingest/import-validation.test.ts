import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ImportRejected, importLines, type LineError } from "../../src/ingest/importer.js";
import { SqliteRecordImport } from "../../src/store/sqlite/importer.js";
import { type Kind, KINDS } from "../../src/domain/kinds/index.js";
import { openWritable } from "../../src/store/sqlite/database.js";
import { rowCounts } from "../support/dump.js";
import { INVALID, VALID, withField } from "./records.js";

const dir = mkdtempSync(join(tmpdir(), "marketdata-import-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

async function importInto(path: string, kind: Kind, lines: string[], skipInvalid = false) {
  const db = openWritable(path);
  const rejects: LineError[] = [];
  try {
    const stats = await importLines(new SqliteRecordImport(db), toIterable(lines), { kind, skipInvalid, onReject: (e) => rejects.push(e) });
    return { stats, rejects, error: undefined };
  } catch (error) {
    return { stats: undefined, rejects, error };
  } finally {
    db.close();
  }
}

async function* toIterable(lines: string[]) {
  yield* lines;
}

describe("import checks every field of every kind", () => {
  it("covers every kind", () => {
    expect(new Set(INVALID.map(([k]) => k))).toEqual(new Set(KINDS));
    for (const kind of KINDS) {
      // Every top-level field of the valid record has at least one bad value.
      const fields = new Set(INVALID.filter(([k]) => k === kind).map(([, f]) => f.split(/[.[]/)[0]));
      expect([...fields].sort(), kind).toEqual(Object.keys(VALID[kind]!).sort());
    }
  });

  it.each(KINDS)("accepts a valid %s record", async (kind) => {
    const { stats, error } = await importInto(join(dir, `ok-${n++}.sqlite`), kind, [JSON.stringify(VALID[kind])]);
    expect(error).toBeUndefined();
    expect(stats).toMatchObject({ lines: 1, inserted: 1, rejected: 0 });
  });

  it.each(INVALID)("%s: rejects %s = %j", async (kind, field, value, reason) => {
    const path = join(dir, `bad-${n++}.sqlite`);
    const good = JSON.stringify(VALID[kind]);
    const bad = JSON.stringify(withField(VALID[kind]!, field, value));
    const { error, rejects } = await importInto(path, kind as Kind, [good, "", bad]);
    expect(error).toBeInstanceOf(ImportRejected);
    expect(rejects).toHaveLength(1);
    expect(rejects[0]!.line).toBe(3);
    const problem = rejects[0]!.problems.find((p) => p.field === field || p.field.startsWith(`${field}.`));
    expect(problem, JSON.stringify(rejects[0]!.problems)).toBeDefined();
    expect(problem!.reason).toMatch(reason);
    // Atomic: the good line before it was not written either.
    const counts = rowCounts(path);
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(0);
  });

  it("rejects unknown fields, missing fields, non-objects and broken JSON", async () => {
    const { rejects } = await importInto(join(dir, `misc-${n++}.sqlite`), "sales", [
      JSON.stringify({ ...VALID.sales, colour: "red" }),
      JSON.stringify({ ...VALID.sales, price: undefined }),
      "[1,2]",
      '{"hash": ',
    ]);
    expect(rejects.map((r) => [r.line, r.problems.map((p) => `${p.field}: ${p.reason}`)[0]])).toEqual([
      [1, "colour: is not a field of this kind"],
      [2, "price: is required"],
      [3, "record: must be a JSON object, got [1,2]"],
      [4, expect.stringMatching(/^record: is not valid JSON/)],
    ]);
  });

  it("stores addresses and hashes lower case", async () => {
    const path = join(dir, `case-${n++}.sqlite`);
    await importInto(path, "sales", [JSON.stringify({ ...VALID.sales, hash: `0x${"AB".repeat(32)}` })]);
    const db = openWritable(path);
    const row = db.prepare("SELECT '0x' || lower(hex(s.hash)) AS hash, c.address FROM sales s JOIN collections c ON c.id = s.collection_id").get();
    db.close();
    expect(row).toEqual({ hash: `0x${"ab".repeat(32)}`, address: VALID.sales!.contractAddress!.toString().toLowerCase() });
  });
});
