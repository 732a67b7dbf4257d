import { compareDecimal } from "../domain/formats.js";

// Rarity by the method of OpenRarity 0.7.5 (decisions.md "Rarity"): pure
// computation over a collection's tokens, no I/O.

export interface TokenTraits {
  assetId: string;
  attributes: readonly { trait_type: string; value: unknown }[];
}

export interface TokenRarity {
  assetId: string;
  rarityScore: number;
  statisticalRarity: number;
  rarityRank: number;
  /** Own traits (meta trait included) whose value no other token has. */
  uniqueTraits: number;
}

export interface CollectionRarity {
  /** Collection entropy H in bits, null categories included. */
  entropy: number;
  tokens: TokenRarity[];
}

export const META_TRAIT = "meta_trait:trait_count";
/** The value category of a trait type a token lacks. */
export const NULL_VALUE = "\u0000null";
const TIE_TOLERANCE = 1e-9;

const normalize = (v: unknown) => String(v).trim().toLowerCase();

/** Each token's traits as type → value, normalized, meta trait added. */
export function normalizedTraits(token: TokenTraits): Map<string, string> {
  const traits = new Map<string, string>();
  for (const a of token.attributes) traits.set(normalize(a.trait_type), normalize(a.value));
  let count = 0;
  for (const v of traits.values()) if (v !== "none" && v !== "") count++;
  traits.set(META_TRAIT, String(count));
  return traits;
}

export function computeRarity(tokens: readonly TokenTraits[]): CollectionRarity {
  const n = tokens.length;
  if (n === 0) return { entropy: 0, tokens: [] };
  const traitsOf = tokens.map(normalizedTraits);

  // counts[type][value]; tokens lacking a type fall in its null category.
  const counts = new Map<string, Map<string, number>>();
  for (const traits of traitsOf) {
    for (const [type, value] of traits) {
      let values = counts.get(type);
      if (!values) counts.set(type, (values = new Map()));
      values.set(value, (values.get(value) ?? 0) + 1);
    }
  }
  for (const values of counts.values()) {
    let present = 0;
    for (const c of values.values()) present += c;
    if (present < n) values.set(NULL_VALUE, n - present);
  }

  let entropy = 0;
  for (const values of counts.values()) {
    for (const c of values.values()) {
      const p = c / n;
      entropy -= p * Math.log2(p);
    }
  }
  const divisor = entropy === 0 ? 1 : entropy;

  const types = [...counts.keys()];
  const scored = tokens.map((token, i) => {
    const traits = traitsOf[i]!;
    let information = 0;
    let logProbability = 0;
    let uniqueTraits = 0;
    for (const type of types) {
      const own = traits.get(type);
      const c = counts.get(type)!.get(own ?? NULL_VALUE)!;
      information -= Math.log2(c / n);
      logProbability += Math.log(c / n);
      if (own !== undefined && c === 1) uniqueTraits++;
    }
    return { assetId: token.assetId, rarityScore: information / divisor, statisticalRarity: logProbability, uniqueTraits, rarityRank: 0 };
  });

  scored.sort(
    (a, b) => b.uniqueTraits - a.uniqueTraits || b.rarityScore - a.rarityScore || compareDecimal(a.assetId, b.assetId),
  );
  scored.forEach((t, i) => {
    const prev = scored[i - 1];
    t.rarityRank = prev && isClose(prev.rarityScore, t.rarityScore) ? prev.rarityRank : i + 1;
  });
  return { entropy, tokens: scored };
}

/** Python's math.isclose with rel_tol only, as OpenRarity compares scores. */
function isClose(a: number, b: number): boolean {
  return Math.abs(a - b) <= TIE_TOLERANCE * Math.max(Math.abs(a), Math.abs(b));
}

/**
 * Every token's full trait vector: its normalized traits, plus the null
 * category of each trait type of the collection that it lacks.
 */
export function traitVectors(tokens: readonly TokenTraits[]): Map<string, Map<string, string>> {
  const own = tokens.map(normalizedTraits);
  const types = new Set<string>();
  for (const t of own) for (const type of t.keys()) types.add(type);
  const out = new Map<string, Map<string, string>>();
  tokens.forEach((token, i) => {
    const traits = own[i]!;
    for (const type of types) if (!traits.has(type)) traits.set(type, NULL_VALUE);
    out.set(token.assetId, traits);
  });
  return out;
}
