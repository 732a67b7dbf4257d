import { refSql } from "../shared/collection-ref.js";
import type pg from "pg";
import type { DataVersion, StoreChanges } from "../ports/reads.js";
import type { PgQueries } from "./statements.js";
import { keepSummaries, windowsHourNow } from "./collection-summaries.js";

// Data versions on PostgreSQL (migration 3): every write transaction ends
// by taking the next data version from store_state and stamping with it the
// collections it changed (collections.data_version), the whole store
// (all_version) when a change may reach every collection, or the keys
// (keys_version). store_state's row stays locked from that update to
// COMMIT, so versions are taken in commit order: a reader that asks for the
// stamps above the version it last saw never misses a commit. The row and
// the stamps replicate with the data, so a replica's answer matches the rows
// it has replayed.

/** What a write transaction changed, collected as it writes. */
export interface Touched {
  /** Collections by id. */
  ids?: readonly number[];
  /** The collections named by the addresses of the transaction's staging table (copy.ts openStage). */
  staged?: boolean;
  /** A change any collection's answers may show (a social user's profile). */
  all?: boolean;
  keys?: boolean;
}

/**
 * The next data version, the stamps of what `touched` names, and the
 * collections list's summaries of what it stamped (collection-summaries.ts):
 * the last statements before COMMIT.
 */
export async function stampVersions(client: pg.ClientBase, touched: Touched): Promise<void> {
  // The collections list's windows move to the clock's hour in the same statement (collection-summaries.ts).
  const r = await client.query<{ v: number; hour: string; rolled: boolean }>(
    `WITH old AS (SELECT windows_hour FROM store_state WHERE id = 1)
     UPDATE store_state s SET data_version = data_version + 1, last_write = now(),
       all_version = CASE WHEN $1 THEN data_version + 1 ELSE all_version END,
       keys_version = CASE WHEN $2 THEN data_version + 1 ELSE keys_version END,
       windows_hour = CASE WHEN $1 OR $4 THEN greatest(old.windows_hour, $3) ELSE old.windows_hour END
     FROM old WHERE s.id = 1 RETURNING s.data_version AS v, s.windows_hour AS hour, s.windows_hour > old.windows_hour AS rolled`,
    [touched.all === true, touched.keys === true, windowsHourNow(), stampsCollections(touched)],
  );
  const { v, hour, rolled } = r.rows[0]!;
  if (touched.ids !== undefined && touched.ids.length > 0) {
    await client.query("UPDATE collections SET data_version = $1 WHERE id = ANY($2::integer[])", [v, touched.ids]);
  }
  if (touched.staged === true) {
    await client.query("UPDATE collections SET data_version = $1 WHERE (chain, address) IN (SELECT chain, address FROM stage)", [v]);
  }
  await keepSummaries(client, v, Number(hour), rolled, stampsCollections(touched));
}

/** Whether a write stamps collections (a key's change alone moves no market data, nor the windows). */
const stampsCollections = (touched: Touched) => (touched.ids !== undefined && touched.ids.length > 0) || touched.staged === true;

/** One statement, one snapshot: the versions, and the collections stamped since `since` unless everything changed. */
export async function changesSince(q: PgQueries, since: DataVersion | undefined): Promise<StoreChanges> {
  const rows = await q.rows<{ data: number; all: number; keys: number; changed: string[] | null }>(
    `SELECT data_version AS data, all_version AS "all", keys_version AS keys,
       CASE WHEN data_version > $1 AND all_version <= $1
         THEN ARRAY(SELECT ${refSql()} FROM collections c WHERE data_version > $1) END AS changed
     FROM store_state WHERE id = 1`,
    [since?.data ?? Number.MAX_SAFE_INTEGER],
  );
  const row = rows[0];
  if (row === undefined) return { now: { data: 0, keys: 0 }, collections: "all" };
  const now = { data: row.data, keys: row.keys };
  if (since === undefined || row.data === since.data) return { now, collections: [] };
  if (row.all > since.data) return { now, collections: "all" };
  return { now, collections: row.changed ?? [] };
}
