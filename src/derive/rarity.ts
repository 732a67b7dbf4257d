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
const TIE_TOLERANCE = 1e-9;

/** A trait type or value as rarity and appraisals compare them: trimmed, lower case. */
export const normalizeTrait = (v: unknown) => String(v).trim().toLowerCase();
/** A value that means the token lacks the trait ("none" or empty): not counted as an attribute. */
export const isEmptyTrait = (value: string) => value === "" || value === "none";

/** Each token's traits as type → value, normalized, meta trait added. */
export function normalizedTraits(token: TokenTraits): Map<string, string> {
  const traits = new Map<string, string>();
  for (const a of token.attributes) traits.set(normalizeTrait(a.trait_type), normalizeTrait(a.value));
  let count = 0;
  for (const v of traits.values()) if (!isEmptyTrait(v)) count++;
  traits.set(META_TRAIT, String(count));
  return traits;
}

export function computeRarity(tokens: readonly TokenTraits[]): CollectionRarity {
  const n = tokens.length;
  if (n === 0) return { entropy: 0, tokens: [] };

  // Values are interned per trait type as small integers (0 is the null
  // category), so counting and scoring work on typed arrays, not strings.
  const typeIndex = new Map<string, number>();
  const valueIds: Map<string, number>[] = [];
  const perToken: Int32Array[] = [];
  for (const token of tokens) {
    const traits = normalizedTraits(token);
    const ids = new Int32Array(traits.size * 2);
    let k = 0;
    for (const [type, value] of traits) {
      let t = typeIndex.get(type);
      if (t === undefined) {
        t = typeIndex.size;
        typeIndex.set(type, t);
        valueIds.push(new Map());
      }
      const values = valueIds[t]!;
      let v = values.get(value);
      if (v === undefined) values.set(value, (v = values.size + 1));
      ids[k++] = t;
      ids[k++] = v;
    }
    perToken.push(ids);
  }
  const types = typeIndex.size;
  const counts = valueIds.map((values) => new Float64Array(values.size + 1));
  for (const ids of perToken) {
    for (let k = 0; k < ids.length; k += 2) counts[ids[k]!]![ids[k + 1]!]! += 1;
  }
  let entropy = 0;
  for (const c of counts) {
    let present = 0;
    for (let v = 1; v < c.length; v++) present += c[v]!;
    c[0] = n - present;
    for (const x of c) if (x > 0) entropy -= (x / n) * Math.log2(x / n);
  }
  const divisor = entropy === 0 ? 1 : entropy;
  const bits = counts.map((c) => c.map((x) => (x > 0 ? -Math.log2(x / n) : 0)));
  const nats = counts.map((c) => c.map((x) => (x > 0 ? Math.log(x / n) : 0)));
  const dense = new Int32Array(types);
  const scored = tokens.map((token, i) => {
    const ids = perToken[i]!;
    // Value id per type; 0, the null category, where the token lacks the type.
    dense.fill(0);
    for (let k = 0; k < ids.length; k += 2) dense[ids[k]!] = ids[k + 1]!;
    let information = 0;
    let logProbability = 0;
    let uniqueTraits = 0;
    for (let t = 0; t < types; t++) {
      const v = dense[t]!;
      information += bits[t]![v]!;
      logProbability += nats[t]![v]!;
      if (v !== 0 && counts[t]![v] === 1) uniqueTraits++;
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
