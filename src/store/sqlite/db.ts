import type Database from "better-sqlite3";

/** A SQLite connection (better-sqlite3). Its own module: the modules database.ts uses (migrations) take the type without importing database.ts. */
export type Db = Database.Database;
