// Transaction hashes and addresses of sales are stored as raw bytes (32 and
// 20) rather than 0x-hex text, on both engines: less than half the size in
// the table and in every index that holds them. Byte order equals lower-case
// hex order, so "ordered by hash" is unchanged. Each engine's hex.ts adds
// the SQL that turns a bytes column back into 0x-hex.

/** The bytes of a 0x-hex value (a parameter of a bytes column). */
export function hexToBytes(hex: string): Buffer {
  return Buffer.from(hex.slice(2), "hex");
}
