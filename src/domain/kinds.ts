// The kinds of record that can be imported (decisions.md): each is the API's
// own JSON record, plus contractAddress where the API record lacks it.

export const KINDS = ["collections", "tokens", "appraisals", "rarity", "sales", "listings", "transfers", "offers", "influencers", "tweets", "scores"] as const;

export type Kind = (typeof KINDS)[number];

export function isKind(s: string): s is Kind {
  return (KINDS as readonly string[]).includes(s);
}
