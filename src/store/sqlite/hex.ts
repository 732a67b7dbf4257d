// Transaction hashes and addresses of sales are stored as raw bytes (32 and
// 20) rather than 0x-hex text: less than half the size in the table and in
// every index that holds them. Byte order equals lower-case hex order, so
// "ordered by hash" is unchanged.

export function hexToBytes(hex: string): Buffer {
  return Buffer.from(hex.slice(2), "hex");
}

/** SQL expression giving the 0x-prefixed lower-case hex of a bytes column. */
export function hexSql(column: string, as: string): string {
  return `'0x' || lower(hex(${column})) AS ${as}`;
}
