/** Every /v1 endpoint with its family's success flag (api.md 2.1). */
export const ENDPOINTS: [path: string, flag: "successful" | "success"][] = [
  ["/v1/asset/appraisals", "successful"],
  ["/v1/asset/rarity", "successful"],
  ["/v1/asset/sales", "success"],
  ["/v1/asset/listings", "success"],
  ["/v1/collection/stats", "successful"],
  ["/v1/collection/influencers", "success"],
  ["/v1/collection/tweets", "success"],
  ["/v1/collection/scores", "successful"],
];
