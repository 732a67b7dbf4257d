import { spawnSync } from "node:child_process";
import Database from "better-sqlite3";
import pg from "pg";
import { runCliSync } from "../src/cli/run-sync.js";

// The engine's own bulk path, for bench:import to hold `import` against:
// the same NDJSON file of sales loaded into the same schema (an empty store
// this build migrated) by the engine's own tools, with no JavaScript per
// row. The file's lines go verbatim into a staging table (the sqlite3
// shell's .import; psql's \copy), SQL turns each into the stored row (JSON
// functions, hex to bytes, the asset key, the price limbs) in one INSERT ...
// SELECT into a table without indexes, and the indexes are built after.
// Nothing is checked: no address or amount shape, no clock skew, no repeats
// of a key beyond the unique index failing. `import` also keeps the hour
// aggregates, the series, the collection's summary and its owners; this
// loads the sales and their indexes only. The figure is a ceiling: what the
// engine does at best with the same file.
//
// SQLite: the shell on this machine (Debian's 3.40) has no unhex(), so the
// statements after .import run through the library's own SQLite (3.5x, in
// one exec: still no JavaScript per row).

/** Whether the engine's command-line tool is installed. */
export function hasTool(engine: "sqlite" | "postgres"): boolean {
  return spawnSync(engine === "sqlite" ? "sqlite3" : "psql", ["--version"]).status === 0;
}

/** The price's 32-bit limbs (store/sqlite/wei.ts splitWei) in SQLite's 64-bit integers, from its decimal text `p`: p = a·10⁹ + b. */
const HI = (p: string) =>
  `((CAST(substr(${p}, 1, max(length(${p}) - 9, 0)) AS INTEGER) * 1953125 + CAST(substr(${p}, -9) AS INTEGER) / 512) >> 23)`;
const LO = (p: string) =>
  `(((CAST(substr(${p}, 1, max(length(${p}) - 9, 0)) AS INTEGER) % 4294967296) * 1000000000 + CAST(substr(${p}, -9) AS INTEGER)) % 4294967296)`;

/** Loads `file` (`lines` sales) into the migrated empty SQLite store at `db`; the seconds it took (shell import, insert, index builds, commit). */
export function sqliteBulkLoad(db: string, file: string, lines: number, address: string): number {
  runCliSync(["migrate", "--db", db]);
  const started = performance.now();
  const shell = spawnSync("sqlite3", [db, "CREATE TABLE stage (line TEXT)", ".mode ascii", '.separator "\\037" "\\n"', `.import ${file} stage`], {
    encoding: "utf8",
  });
  if (shell.status !== 0) throw new Error(`sqlite3 .import: ${shell.stderr}`);
  const d = new Database(db);
  try {
    const indexes = d.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sales' AND sql IS NOT NULL").pluck().all() as string[];
    const j = (field: string) => `json_extract(line, '$.${field}')`;
    d.exec(`BEGIN;
      ${indexes.map((sql) => `DROP INDEX ${/INDEX (\w+)/.exec(sql)![1]};`).join("\n")}
      INSERT INTO collections (address) VALUES ('${address}');
      INSERT INTO sales (collection_id, asset_key, hash, seller, buyer, timestamp, block, price, amount_received, price_hi, price_lo, marketplace, feed_seq)
        SELECT c.id, printf('%02d', length(${j("assetId")})) || ${j("assetId")},
          unhex(substr(${j("hash")}, 3)), unhex(substr(${j("from")}, 3)), unhex(substr(${j("to")}, 3)),
          ${j("timestamp")}, ${j("block")}, ${j("price")}, ${j("amountReceived")},
          ${HI(j("price"))}, ${LO(j("price"))}, ${j("marketplace")}, s.rowid
        FROM stage s, collections c WHERE c.address = '${address}';
      ${indexes.join(";\n")};
      DROP TABLE stage;
      COMMIT;`);
    const seconds = (performance.now() - started) / 1000;
    expectRows(d.prepare("SELECT count(*) FROM sales").pluck().get() as number, lines);
    return seconds;
  } finally {
    d.close();
  }
}

/** The load's rows are the file's lines (a bench that loaded nothing would look fast). */
function expectRows(rows: number, lines: number): void {
  if (rows !== lines) throw new Error(`the engine's bulk path loaded ${rows} rows of ${lines} lines`);
}

/** Loads `file` (`lines` sales) into the migrated empty PostgreSQL database at `url`; the seconds it took (\copy, the empty table's indexes dropped, insert, index builds, commit). */
export async function postgresBulkLoad(url: string, file: string, lines: number, address: string): Promise<number> {
  runCliSync(["migrate", "--db", url]);
  // The index statements of `sales`, from the catalog: dropped while the empty table is filled, built once after.
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let indexes: { name: string; def: string }[];
  try {
    const r = await client.query<{ name: string; def: string }>(
      "SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) AS def FROM pg_index WHERE indrelid = 'sales'::regclass ORDER BY indisunique DESC, indexrelid",
    );
    indexes = r.rows;
  } finally {
    await client.end();
  }
  const j = (field: string) => `(j->>'${field}')`;
  const script = `\\set ON_ERROR_STOP on
BEGIN;
CREATE TEMP TABLE stage (line text);
\\copy stage FROM '${file}' WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')
INSERT INTO collections (address) VALUES ('${address}');
DROP INDEX ${indexes.map((i) => i.name).join(", ")};
INSERT INTO sales (collection_id, asset_id, hash, seller, buyer, timestamp, block, price, amount_received, marketplace)
  SELECT c.id, ${j("assetId")}::numeric, decode(substr(${j("hash")}, 3), 'hex'), decode(substr(${j("from")}, 3), 'hex'),
    decode(substr(${j("to")}, 3), 'hex'), ${j("timestamp")}::bigint, ${j("block")}::bigint, ${j("price")}::numeric,
    ${j("amountReceived")}::numeric, ${j("marketplace")}
  FROM (SELECT line::jsonb AS j FROM stage) s, collections c WHERE c.address = '${address}';
SET LOCAL maintenance_work_mem = '256MB';
${indexes.map((i) => i.def).join(";\n")};
COMMIT;
`;
  const started = performance.now();
  const r = spawnSync("psql", ["-X", "-q", url], { input: script, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`psql: ${r.stderr}`);
  const seconds = (performance.now() - started) / 1000;
  const check = new pg.Client({ connectionString: url });
  await check.connect();
  try {
    expectRows((await check.query<{ n: number }>("SELECT count(*)::int AS n FROM sales")).rows[0]!.n, lines);
  } finally {
    await check.end();
  }
  return seconds;
}
