import Database from "better-sqlite3";

/** True while another connection holds the SQLite store's write lock (an import under way). */
export function writeLocked(path: string): boolean {
  const db = new Database(path);
  db.pragma("busy_timeout = 0");
  try {
    db.exec("BEGIN IMMEDIATE");
    db.exec("ROLLBACK");
    return false;
  } catch {
    return true;
  } finally {
    db.close();
  }
}

/** Resolves once another connection holds the store's write lock; rejects after `timeoutMs`. */
export async function untilWriteLocked(path: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!writeLocked(path)) {
    if (Date.now() > deadline) throw new Error(`${path}: no writer took the lock within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
