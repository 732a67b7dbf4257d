import { openKeyAdmin } from "../store/open.js";
import type { KeyAdmin, KeyScope } from "../store/ports/keys.js";
import { CliError } from "./errors.js";

// `keys`: on a SQLite file or a PostgreSQL database (--db postgres://...).

async function withAdmin<T>(db: string, fn: (admin: KeyAdmin) => Promise<T>): Promise<T> {
  const admin = await openKeyAdmin(db);
  try {
    return await fn(admin);
  } finally {
    await admin.close();
  }
}

/** A --rate value: requests per second, or "default" (the server's --rate-limit). */
function parseRate(text: string): number | null {
  if (text === "default") return null;
  if (!/^[1-9][0-9]{0,8}$/.test(text)) {
    throw new CliError(`--rate must be a whole number of requests per second from 1, or "default", got ${JSON.stringify(text)}`);
  }
  return Number(text);
}

function parseId(idText: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(idText)) throw new CliError(`ID must be a positive integer, got ${JSON.stringify(idText)}`);
  return Number(idText);
}

const rateText = (rate: number | null) => (rate === null ? "the server's default rate limit" : `${rate} requests/s`);

export async function createKey(dbPath: string, name: string, rate = "default", scope: KeyScope = "read"): Promise<void> {
  if (name.trim() === "") throw new CliError("--name must not be empty");
  const rateLimit = parseRate(rate);
  const { id, key } = await withAdmin(dbPath, (admin) => admin.create(name, { rateLimit, scope }));
  process.stderr.write(`Created ${scope} API key ${id} (${name}), ${rateText(rateLimit)}. It is shown only once; store it now.\n`);
  // The key alone on the last line of stdout, so scripts can capture it.
  process.stdout.write(`${key}\n`);
}

export async function listKeys(dbPath: string): Promise<void> {
  const keys = await withAdmin(dbPath, (admin) => admin.list());
  const iso = (t: number | null) => (t === null ? "-" : new Date(t * 1000).toISOString());
  const rows = [
    ["ID", "NAME", "SCOPE", "CREATED", "REVOKED", "RATE/S"],
    ...keys.map((k) => [String(k.id), k.name, k.scope, iso(k.createdAt), iso(k.revokedAt), k.rateLimit === null ? "default" : String(k.rateLimit)]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) process.stdout.write(`${r.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()}\n`);
}

export async function updateKey(dbPath: string, idText: string, rate: string | undefined): Promise<void> {
  const id = parseId(idText);
  if (rate === undefined) throw new CliError("nothing to update: give --rate N or --rate default");
  const rateLimit = parseRate(rate);
  if (!(await withAdmin(dbPath, (admin) => admin.setRateLimit(id, rateLimit)))) throw new CliError(`no API key with id ${idText}`);
  process.stderr.write(`API key ${idText} now has ${rateText(rateLimit)}; servers apply it within a second.\n`);
}

export async function revokeKey(dbPath: string, idText: string): Promise<void> {
  const found = await withAdmin(dbPath, (admin) => admin.revoke(parseId(idText)));
  if (!found) throw new CliError(`no API key with id ${idText}`);
  process.stderr.write(`Revoked API key ${idText}.\n`);
}
