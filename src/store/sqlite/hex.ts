// Hashes and addresses as bytes on SQLite (shared/hex.ts says why).

export { hexToBytes } from "../shared/hex.js";

/** SQL expression giving the 0x-prefixed lower-case hex of a bytes column. */
export function hexSql(column: string, as: string): string {
  return `'0x' || lower(hex(${column})) AS ${as}`;
}
