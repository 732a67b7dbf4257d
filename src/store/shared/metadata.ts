// A token's and a collection's metadata (docs/data.md, "Metadata") as both
// engines keep it: one text column per field, "" where the record left it
// untold, named as the token record names it (OpenSea's metadata standard)
// and as the collection record's fields in snake case.

/** A token row's metadata columns: the token record's own field names. */
export const TOKEN_METADATA_COLUMNS = ["name", "description", "image", "animation_url", "external_url"] as const;

/** A collection record's metadata fields beside its name, and the column each is kept in. */
const COLLECTION_METADATA = { description: "description", image: "image", externalUrl: "external_url", twitter: "twitter", discord: "discord" } as const;
const COLLECTION_METADATA_FIELDS = Object.keys(COLLECTION_METADATA) as (keyof typeof COLLECTION_METADATA)[];

/** A collection row's metadata columns beside its name, in COLLECTION_METADATA's order. */
export const COLLECTION_METADATA_COLUMNS = Object.values(COLLECTION_METADATA);

/** Migration 36 on either engine (its text type): the metadata columns of tokens and collections. */
export const METADATA_MIGRATION = (text: string): string =>
  [
    ...TOKEN_METADATA_COLUMNS.map((c) => `ALTER TABLE tokens ADD COLUMN ${c} ${text} NOT NULL DEFAULT ''`),
    ...COLLECTION_METADATA_COLUMNS.map((c) => `ALTER TABLE collections ADD COLUMN ${c} ${text} NOT NULL DEFAULT ''`),
  ].join(";\n") + ";";

/** A token record's metadata fields (domain/kinds/parts.ts tokenMetadata). */
export type TokenMetadata = Readonly<Record<(typeof TOKEN_METADATA_COLUMNS)[number], string>>;

/** A collection record's metadata fields (domain/kinds/collections.ts). */
export type CollectionMetadata = Readonly<Record<keyof typeof COLLECTION_METADATA, string>>;

/** A token record's metadata as its row's columns, in TOKEN_METADATA_COLUMNS order ("" for a field left out). */
export function tokenMetadataValues(r: Partial<TokenMetadata>): string[] {
  return TOKEN_METADATA_COLUMNS.map((c) => r[c] ?? "");
}

/** A collection record's metadata as its row's columns, in COLLECTION_METADATA_COLUMNS order ("" for a field left out). */
export function collectionMetadataValues(r: Partial<CollectionMetadata>): string[] {
  return COLLECTION_METADATA_FIELDS.map((f) => r[f] ?? "");
}

/** A row's metadata columns (of its table as `alias`), as a select list. */
export function metadataSql(alias: string, table: "tokens" | "collections"): string {
  return (table === "tokens" ? TOKEN_METADATA_COLUMNS : COLLECTION_METADATA_COLUMNS).map((c) => `${alias}.${c}`).join(", ");
}
