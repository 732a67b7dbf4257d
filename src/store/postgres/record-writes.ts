import { comparedColumns } from "../shared/token-feed.js";
import type pg from "pg";

// How each importable kind lands in PostgreSQL: its records are streamed by
// COPY into a temporary staging table (one text column per field, plus the
// line number), then merged into the real tables by set-based upserts keyed
// by decisions.md's natural keys. Within one file the last line of a key
// wins, as a line-by-line upsert would leave it. The merge counts inserted
// and updated rows; a row whose values did not change is not rewritten.

export interface StageColumn {
  name: string;
  type: string;
}

export interface BulkKind {
  stage: readonly StageColumn[];
  /** The natural key's columns of the table the kind's rows are counted in (the declaration's naturalKey). */
  key: readonly string[];
  /** A checked record's values, in stage column order (line excluded). */
  row(record: Record<string, unknown>): unknown[];
  /** Statements run after COPY, in order; `counts` is the one whose result row counts the kind's rows. */
  statements: readonly string[];
  counts: number;
  /**
   * Counts per batch when several batches share one stage (PgRecordImport
   * importBatches): rows `{batch, inserted, updated}`, run just before the
   * `counts` statement (classifySql).
   */
  classify: string;
  /** The statement that counts rows shared by every collection (social users), when the kind writes any. */
  sharedCounts?: number;
  /** The tables the statements write: vacuumed and analyzed after the commit. */
  tables: readonly string[];
  /**
   * The statements keep aggregates recomputed from the rows (sales_hourly):
   * they run one transaction at a time on the store (importer.ts takes
   * WRITE_LOCK first), or two writers' recomputed hours would each miss the
   * other's rows.
   */
  serialized?: boolean;
  /**
   * The advisory lock serialized writes take (default WRITE_LOCK). A live
   * feed's rows take positions (feed_seq) under it, held to COMMIT, so that
   * positions grow in commit order.
   */
  lock?: number;
  /** Statements run after the merge (when it changed anything). */
  afterward?: readonly string[];
  /** Runs last, whatever the counts: work read back in TypeScript (wash.ts evaluateWash). */
  finish?: (client: pg.PoolClient) => Promise<void>;
  /** Refuses the stage, before anything is merged, when it holds a record the store must not take (RecordConflictError). */
  check?: (client: pg.PoolClient) => Promise<void>;
  /** Runs after check, before the statements: a step whose statements need the stage's values bound (reorgs.ts). */
  prepare?: (client: pg.PoolClient) => Promise<void>;
  /**
   * The kind as merged when its stage holds a record taken back ("removed":
   * reorgs.ts): the statements that delete those first, and upserts that
   * leave them (and the lines they take back) out. Chosen per stage, so a
   * stage without one pays nothing for them.
   */
  withRemovals?: BulkKind;
  /** Rows {batch, removed}: what each batch took back, counted as updated (withRemovals, the reorgs kind). */
  removed?: string;
  /**
   * Run last, whatever the counts: rows `id`, collections changed by the
   * clock rather than by the stage (listings that came due lapse:
   * shared/listing-orders.ts), stamped beside the stage's.
   */
  settle?: string;
  /** The ids of the collections its statements changed, stamped instead of the stage's (a stage naming none: reorgs). */
  touches?: string;
  /** A change of it may reach every collection (a chain's finality): what the servers remember of any is forgotten. */
  touchesAll?: boolean;
}

/** A kind as kind-writes.ts writes it: the statements around the one that counts its rows. */
export type KindSpec = Omit<BulkKind, "statements" | "counts" | "classify" | "key"> & {
  before: readonly string[];
  counted: { sql: string; classify: string; key: readonly string[] };
  after?: readonly string[];
};

/** A kind's spec as the importer runs it. */
export function bulkKind({ before, counted, after = [], ...rest }: KindSpec): BulkKind {
  return { ...rest, statements: [...before, counted.sql, ...after], counts: before.length, classify: counted.classify, key: counted.key };
}

/** The advisory lock of the writes that keep aggregates (BulkKind.serialized), held to the end of their transaction. */
export const WRITE_LOCK = 0x6d64_7772;
/** The advisory lock of listings' writes: their feed positions in commit order, apart from the sales' lock. */
export const LISTINGS_LOCK = 0x6d64_6c77;
/** The advisory lock of tokens' writes: their triggers count owners' tokens (migration 6), one writer at a time. */
export const TOKENS_LOCK = 0x6d64_746b;

export const col = (name: string, type = "text"): StageColumn => ({ name, type });

/** Every marketplace the stage names, known to the store (migration 17: a filter naming none is refused). */
export const KNOW_MARKETPLACES = "INSERT INTO marketplaces (name) SELECT DISTINCT marketplace FROM stage ON CONFLICT (name) DO NOTHING";

/** Every collection (chain and address) the stage names, registered (its id is what rows refer to). */
export const REGISTER_COLLECTIONS =
  "INSERT INTO collections (chain, address) SELECT DISTINCT chain, address FROM stage ON CONFLICT (chain, address) DO NOTHING";

/**
 * An upsert of `table` from `source` (a query giving the key and value
 * columns and `line`), the last line of each key winning, returning counts.
 * `order`, when given, is the order rows are inserted in: that of the
 * table's largest index, so that its pages are filled one after the other
 * instead of at random (bench:import: a sixth less time merging sales).
 */
export function upsertSql(
  table: string,
  key: readonly string[],
  values: readonly string[],
  source: string,
  order?: string,
  feed = false,
): string {
  const all = [...key, ...values].join(", ");
  const k = key.join(", ");
  // A feed's rows take their positions in the file's order (the order SQLite
  // writes them in), whatever order they are inserted in; an unchanged row's
  // position is left unused.
  const rows = feed ? "fed" : "src";
  const columns = feed ? `${all}, feed_seq` : all;
  return `WITH src AS (SELECT DISTINCT ON (${k}) * FROM (${source}) x ORDER BY ${k}, line DESC),${
    feed ? `
    fed AS (SELECT s.*, nextval('feed_seq') AS feed_seq FROM (SELECT * FROM src ORDER BY line) s),` : ""
  }
    up AS (
      INSERT INTO ${table} AS t (${columns}) SELECT ${columns} FROM ${rows}${order === undefined ? "" : ` ORDER BY ${order}`}
      ON CONFLICT (${k}) DO UPDATE SET ${feed ? "feed_seq = EXCLUDED.feed_seq, " : ""}${values.map((v) => `${v} = EXCLUDED.${v}`).join(", ")}
      WHERE (${comparedColumns(values).map((v) => `t.${v}`).join(", ")}) IS DISTINCT FROM (${comparedColumns(values).map((v) => `EXCLUDED.${v}`).join(", ")})
      RETURNING (xmax = 0) AS inserted)
    SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*) FILTER (WHERE NOT inserted)::int AS updated FROM up`;
}


/** Lines of one batch among several in a stage: its line numbers are batch * BATCH_LINES + its own. */
export const BATCH_LINES = 1_000_000;

/**
 * Counts, per batch of a shared stage, what the upsert of the same
 * arguments would have counted had each batch merged alone, in order: of a
 * key's lines within a batch the last one counts, compared with the same
 * key's value in the batch before it that names it, or else with the table's
 * row (inserted when there is neither).
 */
export function classifySql(table: string, key: readonly string[], values: readonly string[], source: string): string {
  const k = key.join(", ");
  const vals = (alias: string) => `ROW(${comparedColumns(values).map((v) => `${alias}.${v}`).join(", ")})`;
  return `WITH src AS (
      SELECT DISTINCT ON (x.line / ${BATCH_LINES}, ${key.map((c) => `x.${c}`).join(", ")}) x.*, (x.line / ${BATCH_LINES})::int AS batch_no
      FROM (${source}) x ORDER BY x.line / ${BATCH_LINES}, ${key.map((c) => `x.${c}`).join(", ")}, x.line DESC),
    seq AS (
      SELECT src.*, lag(${vals("src")}) OVER w AS prev, row_number() OVER w AS nth FROM src
      WINDOW w AS (PARTITION BY ${k} ORDER BY batch_no))
    SELECT s.batch_no AS batch,
      count(*) FILTER (WHERE s.nth = 1 AND t.${key[0]} IS NULL)::int AS inserted,
      count(*) FILTER (WHERE CASE WHEN s.nth > 1 THEN ${vals("s")} IS DISTINCT FROM s.prev
                                 ELSE t.${key[0]} IS NOT NULL AND ${vals("t")} IS DISTINCT FROM ${vals("s")} END)::int AS updated
    FROM seq s LEFT JOIN ${table} t ON ${key.map((c) => `t.${c} = s.${c}`).join(" AND ")}
    GROUP BY s.batch_no`;
}

/** The upsert a kind counts its rows by, and its count per batch (upsertSql, classifySql). */
export function counted(...args: Parameters<typeof upsertSql>): { sql: string; classify: string; key: readonly string[] } {
  const [table, key, values, source] = args;
  return { sql: upsertSql(...args), classify: classifySql(table, key, values, source), key };
}

export const bytes = (c: string) => `decode(substr(st.${c}, 3), 'hex')`;
export const withCollection = (select: string) => `SELECT ${select}, st.line FROM stage st JOIN collections c ON c.chain = st.chain AND c.address = st.address`;

/**
 * A staged line the merge writes when its stage holds removals (BulkKind
 * withRemovals): not a removal, and not followed by one of its natural key
 * (`key`: the stage's columns naming it), which takes it back.
 */
export const LIVE_LINE = (key: readonly string[]) =>
  `NOT st.removed AND NOT EXISTS (SELECT 1 FROM stage r WHERE r.removed AND r.line > st.line AND ${key.map((c) => `r.${c} = st.${c}`).join(" AND ")})`;

/** A staged removal that is its key's last line: what the merge takes back. */
export const LAST_REMOVAL = (key: readonly string[]) =>
  `st.removed AND NOT EXISTS (SELECT 1 FROM stage r WHERE r.line > st.line AND ${key.map((c) => `r.${c} = st.${c}`).join(" AND ")})`;

/** One COPY text-format line of `values` (tab-separated, \N for null, backslash escapes). */
export function copyLine(line: number, values: readonly unknown[]): string {
  let out = String(line);
  for (const v of values) out += `\t${copyValue(v)}`;
  return `${out}\n`;
}

function copyValue(v: unknown): string {
  if (v === null || v === undefined) return "\\N";
  if (typeof v === "boolean") return v ? "t" : "f";
  if (typeof v === "number" || typeof v === "bigint") return String(v);
  // bytea's hex input (\x...), its backslash escaped for COPY.
  if (v instanceof Uint8Array) return `\\\\x${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("hex")}`;
  return String(v).replace(/[\\\t\n\r]/g, (c) => (c === "\\" ? "\\\\" : c === "\t" ? "\\t" : c === "\n" ? "\\n" : "\\r"));
}
