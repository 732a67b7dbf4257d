import type { Kind } from "./kinds/index.js";

/**
 * The kinds a collection's export carries (docs/export.md), in the order an
 * import into an empty store takes them: the collection's own record first,
 * tokens before the sales and transfers that move their owners.
 */
export const EXPORT_KINDS = ["collections", "spam", "tokens", "flags", "sales", "transfers", "listings", "offers", "appraisals", "rarity"] as const satisfies readonly Kind[];
export type ExportKind = (typeof EXPORT_KINDS)[number];

export function isExportKind(s: string): s is ExportKind {
  return (EXPORT_KINDS as readonly string[]).includes(s);
}
