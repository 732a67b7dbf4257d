import type { DescEnum, DescField } from "@bufbuild/protobuf";

// The /v1 JSON dialect (decisions.md): lowerCamelCase names; every field
// present, defaults included; 64-bit integers as JSON numbers; enum values
// without their shared prefix; unset singular message fields as null.
// json-writer.ts compiles it per message type; the reflective reference that
// tests compare against is test/support/rest-json-oracle.ts.

/** `LISTING_STATUS_CREATED` → `CREATED`; unknown numbers stay numbers. */
export function enumName(desc: DescEnum, value: number): string | number {
  const v = desc.values.find((x) => x.number === value);
  return v ? shortEnumName(desc, v.name) : value;
}

export function shortEnumName(desc: DescEnum, name: string): string {
  const prefix = desc.sharedPrefix?.toUpperCase();
  return prefix && name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

/**
 * Fields a parameter's answer appends, left out when not set (where a
 * proto3 `optional` scalar is otherwise null), so that an answer without the
 * parameter keeps api.md's shape byte for byte: the stats' count of sales
 * without a USD price, and the series' (currency=usd, docs/money.md). The writer, its oracle
 * and the OpenAPI document read this list.
 */
const ONLY_WHEN_ASKED = new Set([
  "marketdata.v1.CollectionStats.unpriced_num_sales",
  "marketdata.v1.MarketplaceStats.unpriced_num_sales",
  // The series' (currency=usd: docs/money.md, "USD kept with the series").
  "marketdata.v1.StatsBucket.unpriced_num_sales",
]);

export const onlyWhenAsked = (field: DescField): boolean => ONLY_WHEN_ASKED.has(`${field.parent.typeName}.${field.name}`);
