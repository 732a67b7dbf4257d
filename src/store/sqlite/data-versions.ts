import { refSql } from "../shared/collection-ref.js";
import type { Statement } from "better-sqlite3";
import type { StoreChanges } from "../ports/reads.js";
import type { Db } from "./db.js";
import { type Flipped, SummaryKeeper } from "./collection-summaries.js";

// Data versions on SQLite (migration 5). A write transaction, just before it
// commits, takes the next store version and stamps with it each collection
// whose rows it changed, or the whole store when the change may reach every
// collection (a social user's profile, shared by their influencer and tweet
// rows everywhere). The write lock orders commits, so versions grow in
// commit order and a reader that asks for stamps above the version it last
// saw never misses one.

/** What a transaction changed, collected as it writes. */
export class TouchedCollections {
  readonly ids = new Set<number>();
  /** Of those, the collections whose flagged sales may have changed otherwise than by `flips` (a sale changed or taken back): their summaries with wash are summed again (collection-summaries.ts). */
  readonly washed = new Set<number>();
  /** The sales whose mask flipped, by collection: +1 flagged, -1 cleared (the summaries with wash move by them). */
  readonly flips = new Map<number, Flipped[]>();
  all = false;

  add(collectionId: number): void {
    this.ids.add(collectionId);
  }

  get empty(): boolean {
    return !this.all && this.ids.size === 0;
  }

  flipped(collectionId: number, f: Flipped): void {
    const list = this.flips.get(collectionId);
    if (list === undefined) this.flips.set(collectionId, [f]);
    else list.push(f);
  }

  /** The flips of a transaction rolled back are not what its next commit moved: their collections are summed again. */
  distrustFlips(): void {
    for (const c of this.flips.keys()) this.washed.add(c);
    this.flips.clear();
  }

  clear(): void {
    this.ids.clear();
    this.washed.clear();
    this.flips.clear();
    this.all = false;
  }
}

/** Each connection's keeper of the collections list's summaries. */
const keepers = new WeakMap<Db, SummaryKeeper>();

/**
 * Stamps what `touched` names with the next store version, inside the
 * caller's transaction, and keeps the summaries of the collections it names
 * (collection-summaries.ts); nothing when it names nothing.
 */
export function stampVersions(db: Db, touched: TouchedCollections): void {
  if (touched.empty) return;
  let keeper = keepers.get(db);
  if (keeper === undefined) keepers.set(db, (keeper = new SummaryKeeper(db)));
  keeper.keep(touched.ids, undefined, touched);
  const v = (db.prepare("UPDATE store_state SET version = version + 1 WHERE id = 1 RETURNING version").pluck().get() as number);
  if (touched.all) db.prepare("UPDATE store_state SET all_version = ? WHERE id = 1").run(v);
  const stamp = db.prepare("UPDATE collections SET data_version = ? WHERE id = ?");
  for (const id of touched.ids) stamp.run(v, id);
  touched.clear();
}

/**
 * The reader's side: what moved since a version it saw. SQLite's
 * data_version (shared memory, a few µs) says whether any other connection
 * committed; only then are the stamps read.
 */
export class VersionReader {
  readonly #commits: Statement;
  readonly #keyCommits: Statement;
  readonly #state: Statement;
  readonly #changed: Statement;
  #lastCommits = -1;
  #lastState: [number, number] = [0, 0];

  constructor(db: Db, keys: Db) {
    this.#commits = db.prepare("PRAGMA data_version").pluck();
    this.#keyCommits = keys.prepare("PRAGMA data_version").pluck();
    this.#state = db.prepare("SELECT version, all_version FROM store_state WHERE id = 1").raw();
    this.#changed = db.prepare(`SELECT ${refSql()} FROM collections c WHERE data_version > ?`).pluck();
  }

  changesSince(since: { data: number; keys: number } | undefined): StoreChanges {
    const commits = this.#commits.get() as number;
    if (commits !== this.#lastCommits) {
      this.#lastState = this.#state.get() as [number, number];
      this.#lastCommits = commits;
    }
    const [version, allVersion] = this.#lastState;
    const now = { data: version, keys: this.#keyCommits.get() as number };
    if (since === undefined || version === since.data) return { now, collections: [] };
    if (allVersion > since.data) return { now, collections: "all" };
    return { now, collections: this.#changed.all(since.data) as string[] };
  }
}
