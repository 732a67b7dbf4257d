// Hashes and addresses as bytea on PostgreSQL (shared/hex.ts says why).

export { hexToBytes } from "../shared/hex.js";

/** SQL expression giving the 0x-prefixed lower-case hex of a bytea column. */
export function hexExpr(column: string): string {
  return `'0x' || encode(${column}, 'hex')`;
}

/** hexExpr, named `as` in a select list. */
export function hexSql(column: string, as: string): string {
  return `${hexExpr(column)} AS ${as}`;
}
