import { migrateStore } from "../store/open.js";

// `migrate`: brings a store to this build's schema, on either engine: a
// SQLite file (created if absent) or a PostgreSQL database (--db
// postgres://...; run it against the primary). import and demo migrate
// SQLite stores themselves; serve never migrates, it refuses a store whose
// schema is not this build's.

export async function runMigrate(db: string): Promise<void> {
  const { description, from, to } = await migrateStore(db);
  process.stderr.write(
    from === to ? `${description} is at schema version ${to}: nothing to do\n` : `migrated ${description} from schema version ${from} to ${to}\n`,
  );
}
