import { isEmptyTrait, normalizeTrait, type TokenTraits } from "./rarity.js";

// What the appraisal model knows of a token: a sparse vector over the
// collection's trait values. Every attribute counts, a repeated trait type
// (a punk's several `accessory` attributes) included; the number of
// attributes is a value of its own; and, per trait type, the information
// of the token's values of that type, −ln(share of tokens with the value),
// summed over repeats: the regressor that lets a value seen in few or no
// sales borrow the premium its rarity implies from the other values of its
// type.

export interface FeatureVector {
  /** Column indices, increasing. */
  readonly ids: Int32Array;
  readonly values: Float64Array;
}

export interface FeatureSpace {
  /** Column names: `type=value`, `count=n`, `rarity:type`. */
  readonly names: readonly string[];
  readonly byAsset: ReadonlyMap<string, FeatureVector>;
}

/** The attributes of a token as normalized (type, value) pairs, repeats kept, exact duplicates once. */
export function traitPairs(token: TokenTraits): [string, string][] {
  const seen = new Set<string>();
  const out: [string, string][] = [];
  for (const a of token.attributes) {
    const type = normalizeTrait(a.trait_type);
    const value = normalizeTrait(a.value);
    const key = `${type}=${value}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push([type, value]);
  }
  return out;
}

export function featureSpace(tokens: readonly TokenTraits[]): FeatureSpace {
  const pairs = tokens.map(traitPairs);
  const share = new Map<string, number>();
  for (const p of pairs) for (const [type, value] of p) share.set(`${type}=${value}`, (share.get(`${type}=${value}`) ?? 0) + 1);
  const n = Math.max(1, tokens.length);
  const names: string[] = [];
  const index = new Map<string, number>();
  const column = (name: string) => {
    let i = index.get(name);
    if (i === undefined) {
      i = names.length;
      names.push(name);
      index.set(name, i);
    }
    return i;
  };
  const byAsset = new Map<string, FeatureVector>();
  const cols: number[] = [];
  const vals: number[] = [];
  const cell = (c: number, v: number) => {
    const at = cols.indexOf(c);
    if (at === -1) {
      cols.push(c);
      vals.push(v);
    } else vals[at]! += v;
  };
  tokens.forEach((token, k) => {
    cols.length = 0;
    vals.length = 0;
    let count = 0;
    for (const [type, value] of pairs[k]!) {
      const key = `${type}=${value}`;
      cell(column(key), 1);
      if (isEmptyTrait(value)) continue;
      count++;
      cell(column(`rarity:${type}`), -Math.log(share.get(key)! / n));
    }
    cell(column(`count=${count}`), 1);
    // Columns in increasing order (a token has a few dozen at most).
    const order = cols.map((_, i) => i).sort((a, b) => cols[a]! - cols[b]!);
    const ids = new Int32Array(order.length);
    const values = new Float64Array(order.length);
    order.forEach((o, i) => {
      ids[i] = cols[o]!;
      values[i] = vals[o]!;
    });
    byAsset.set(token.assetId, { ids, values });
  });
  return { names, byAsset };
}

/** True for the columns that carry a rarity (penalized lightly: they are few and informed by many sales). */
export const isRarityColumn = (name: string) => name.startsWith("rarity:");
