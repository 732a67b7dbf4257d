import { ApiKeyAdmin } from "../store/api-keys.js";
import { openWritable } from "../store/database.js";
import { CliError } from "./errors.js";

function withAdmin<T>(dbPath: string, fn: (admin: ApiKeyAdmin) => T): T {
  const db = openWritable(dbPath);
  try {
    return fn(new ApiKeyAdmin(db));
  } finally {
    db.close();
  }
}

export function createKey(dbPath: string, name: string): void {
  if (name.trim() === "") throw new CliError("--name must not be empty");
  const { id, key } = withAdmin(dbPath, (admin) => admin.create(name));
  process.stderr.write(`Created API key ${id} (${name}). It is shown only once; store it now.\n`);
  // The key alone on the last line of stdout, so scripts can capture it.
  process.stdout.write(`${key}\n`);
}

export function listKeys(dbPath: string): void {
  const keys = withAdmin(dbPath, (admin) => admin.list());
  const iso = (t: number | null) => (t === null ? "-" : new Date(t * 1000).toISOString());
  const rows = [["ID", "NAME", "CREATED", "REVOKED"], ...keys.map((k) => [String(k.id), k.name, iso(k.createdAt), iso(k.revokedAt)])];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) process.stdout.write(`${r.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()}\n`);
}

export function revokeKey(dbPath: string, idText: string): void {
  if (!/^[1-9][0-9]{0,15}$/.test(idText)) throw new CliError(`ID must be a positive integer, got ${JSON.stringify(idText)}`);
  const found = withAdmin(dbPath, (admin) => admin.revoke(Number(idText)));
  if (!found) throw new CliError(`no API key with id ${idText}`);
  process.stderr.write(`Revoked API key ${idText}.\n`);
}
