import { echo } from "../domain/echo.js";
import type { CollectionsRepository } from "../store/ports/reads.js";
import { invalid } from "./params.js";

// A marketplace filter naming no marketplace the store has any record of is
// the caller's mistake (a typo, a marketplace this deployment is not fed),
// told with the names there are, rather than answered an empty list. The
// store keeps the names its writes bring (migration 18 / 17); names are
// never removed, so a name once known is remembered here and the store is
// asked again only for a name not yet seen: a marketplace whose first record
// was just committed is known at once.

/** How many names the refusal lists. */
const LISTED = 30;

export type MarketplaceCheck = (marketplace: string | undefined) => Promise<void>;

export function marketplaceCheck(collections: CollectionsRepository): MarketplaceCheck {
  const known = new Set<string>();
  return async (marketplace) => {
    if (marketplace === undefined || known.has(marketplace)) return;
    const names = await collections.knownMarketplaces();
    for (const n of names) known.add(n);
    if (known.has(marketplace)) return;
    const listed = names.slice(0, LISTED).join(", ");
    const more = names.length > LISTED ? ` and ${names.length - LISTED} more` : "";
    throw invalid(
      names.length === 0
        ? `marketplace ${echo(marketplace)}: this store has no record of any marketplace yet`
        : `marketplace ${echo(marketplace)} is not one this store has records of; known: ${listed}${more}`,
    );
  };
}
