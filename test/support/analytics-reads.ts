import type { ReadRepositories } from "../../src/store/ports.js";

/** Every read path of the analytics repository and filter combination, for the query-plan tests of both engines. */
export async function exerciseAnalytics(store: ReadRepositories, id: number): Promise<void> {
  for (const marketplace of [undefined, "BLUR"]) {
    for (const at of [undefined, 1_700_500_000]) await store.analytics.floors(id, { marketplace, at });
  }
  await store.analytics.holders(id, { limit: 5, after: null });
  await store.analytics.holders(id, { limit: 5, after: [2, "0x00"] });
  for (const interval of ["hour", "day", "week"] as const) {
    for (const marketplace of [undefined, "BLUR"]) {
      for (const assetId of [undefined, "7"]) {
        await store.analytics.series(id, { interval, from: 1_699_833_600, to: 1_700_438_400, marketplace, assetId });
      }
    }
  }
  await store.analytics.salesExtent(id);
}
